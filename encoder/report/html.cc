// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/html.cc - `gotrace report --html`: one page --------===//
//
// One self-contained HTML file (inline CSS and JS, no network): per trace a
// canvas timeline of every thread's states (each pixel shows the state that
// covered most of its time, so 100 threads x 10 s stay readable; wheel to
// zoom, drag to pan, double-click to reset, hover for the interval), an
// icicle of the top blocking sites and the heap over time. The page sets
// document.title to "gotrace report: OK" once drawn, or to "gotrace report:
// ERROR ..." from window.onerror, which the headless-browser test reads.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "encoder/printable.h"
#include "encoder/report/report.h"

namespace gotrace::report {
namespace {

void Num(std::string* o, int64_t v) { *o += std::to_string(v); }

std::string FrameLabel(const Frame& f) {
  std::string s = f.func.empty() ? "?" : f.func;
  if (!f.file.empty() && f.file != "?") {
    const size_t i = f.file.rfind('/');
    s += " " + (i == std::string::npos ? f.file : f.file.substr(i + 1)) + ":" + std::to_string(f.line);
  }
  return s;
}

std::string Data(const std::vector<Report>& reports, size_t top) {
  std::string o = "{\"kinds\":[";
  for (size_t i = 0; i < KnownKinds().size(); ++i) {
    if (i) o += ',';
    o += JsonString(KnownKinds()[i], /*for_script=*/true);
  }
  o += "],\"traces\":[";
  for (size_t ri = 0; ri < reports.size(); ++ri) {
    const Report& r = reports[ri];
    if (ri) o += ',';
    o += "{\"file\":";
    o += JsonString(r.file, /*for_script=*/true);
    std::string info;
    for (const auto& p : r.processes)
      info += (info.empty() ? "" : "; ") + ("process " + p.pid + (p.cmd.empty() ? "" : " " + p.cmd)) +
              ", scheduling " + p.sched;
    o += ",\"info\":";
    o += JsonString(info, /*for_script=*/true);
    o += ",\"duration\":";
    Num(&o, std::max<int64_t>(1, r.duration_ns));
    o += ",\"threads\":[";
    for (size_t ti = 0; ti < r.threads.size(); ++ti) {
      const ThreadReport& t = r.threads[ti];
      if (ti) o += ',';
      o += "{\"name\":";
      o += JsonString(t.name, /*for_script=*/true);
      o += ",\"tid\":" + std::to_string(t.goid) + ",\"iv\":[";
      for (size_t i = 0; i < t.intervals.size(); ++i) {
        const Interval& v = t.intervals[i];
        if (i) o += ',';
        Num(&o, v.start);
        o += ',';
        Num(&o, v.end - v.start);
        o += ',';
        Num(&o, v.state);
      }
      o += "]}";
    }
    // The sites, and apart the idle ones (report.h: BlockSite::idle), as the
    // text report lists them.
    for (const bool idle : {false, true}) {
      o += idle ? "],\"idle\":[" : "],\"sites\":[";
      size_t n = 0;
      for (const BlockSite& b : r.sites) {
        if (b.idle != idle || n >= std::max<size_t>(top, 50)) continue;
        if (n++) o += ',';
        o += "{\"kind\":";
        o += JsonString(b.kind, /*for_script=*/true);
        o += ",\"total\":" + std::to_string(b.total_ns) + ",\"count\":" + std::to_string(b.count) +
             ",\"frames\":[";
        for (size_t f = 0; f < b.frames.size(); ++f) {
          if (f) o += ',';
          o += JsonString(FrameLabel(b.frames[f]), /*for_script=*/true);
        }
        o += "]}";
      }
    }
    // The heap: at most ~4000 points, each bucket's largest value kept.
    o += "],\"heap\":[";
    const size_t n = r.heap.size(), step = std::max<size_t>(1, n / 4000);
    bool first = true;
    for (size_t i = 0; i < n; i += step) {
      uint64_t m = 0;
      for (size_t k = i; k < std::min(n, i + step); ++k) m = std::max(m, r.heap[k].second);
      if (!first) o += ',';
      first = false;
      Num(&o, r.heap[i].first);
      o += ',';
      o += std::to_string(m);
    }
    o += "]}";
  }
  return o + "]}";
}

constexpr const char* kHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>gotrace report: loading</title>
<style>
body{font:13px system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:18px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}
.info{color:#555;margin-bottom:8px}.legend span{display:inline-block;margin:0 10px 4px 0}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}
canvas{display:block;border:1px solid #ccc;cursor:crosshair}
#tip{position:fixed;pointer-events:none;background:#333;color:#fff;padding:4px 7px;border-radius:3px;
font-size:12px;white-space:pre;display:none;z-index:9}
.hint{color:#777;font-size:12px}
</style></head><body>
<div id="tip"></div>
<div id="root"></div>
<script>
window.onerror=function(m){document.title='gotrace report: ERROR '+m;};
</script>
<script id="data" type="application/json">)HTML";

constexpr const char* kTail = R"HTML(</script>
<script>
(function(){
'use strict';
const D=JSON.parse(document.getElementById('data').textContent);
const STATES=['running','runnable'].concat(D.kinds);
const COLOR={running:'#2e7d32',runnable:'#f9a825',mutex:'#c62828',rwlock:'#ad1457',cond:'#6a1b9a',
 sem:'#4527a0',futex:'#283593',barrier:'#1565c0',sync:'#b71c1c',join:'#00838f',sleep:'#90a4ae',
 net:'#0277bd',syscall:'#ef6c00',offcpu:'#5d4037',chan:'#7b1fa2',block:'#455a64',gc:'#9e9d24',
 waiting:'#bdbdbd',other:'#757575'};
const tip=document.getElementById('tip');
function dur(ns){if(ns<1e3)return Math.round(ns)+' ns';if(ns<1e6)return (ns/1e3).toFixed(1)+' us';
 if(ns<1e9)return (ns/1e6).toFixed(1)+' ms';return (ns/1e9).toFixed(3)+' s';}
function size(b){if(b<10240)return b+' B';if(b<10485760)return (b/1024).toFixed(1)+' KB';
 return (b/1048576).toFixed(1)+' MB';}
function el(tag,attrs,parent){const e=document.createElement(tag);Object.assign(e,attrs||{});
 if(parent)parent.appendChild(e);return e;}
function showTip(ev,text){tip.textContent=text;tip.style.display='block';
 tip.style.left=Math.min(ev.clientX+12,window.innerWidth-tip.offsetWidth-4)+'px';
 tip.style.top=(ev.clientY+14)+'px';}
function hideTip(){tip.style.display='none';}
function niceStep(span,px){const raw=span/Math.max(1,px/100);const p=Math.pow(10,Math.floor(Math.log10(raw)));
 for(const m of [1,2,5,10]){if(m*p>=raw)return m*p;}return 10*p;}
function canvasOf(parent,w,h){const c=el('canvas',{},parent);const r=window.devicePixelRatio||1;
 c.width=Math.round(w*r);c.height=Math.round(h*r);c.style.width=w+'px';c.style.height=h+'px';
 const g=c.getContext('2d');g.scale(r,r);return [c,g];}

function timeline(parent,tr){
 const LW=190,RH=14,AH=26,W=Math.max(600,Math.min(1600,document.body.clientWidth-40));
 const PW=W-LW,H=AH+tr.threads.length*RH+2;
 const [c,g]=canvasOf(parent,W,H);
 let t0=0,t1=tr.duration;
 const NS=STATES.length,acc=new Float64Array(PW*NS);
 function draw(){
  g.clearRect(0,0,W,H);g.fillStyle='#fff';g.fillRect(0,0,W,H);
  const span=t1-t0,sc=PW/span,step=niceStep(span,PW);
  g.fillStyle='#444';g.font='11px sans-serif';g.textBaseline='middle';
  g.strokeStyle='#e0e0e0';g.beginPath();
  for(let t=Math.ceil(t0/step)*step;t<=t1;t+=step){const x=LW+(t-t0)*sc;g.moveTo(x+.5,AH-6);g.lineTo(x+.5,H);
   g.fillText(dur(t),x+2,AH/2-2);}
  g.stroke();
  tr.threads.forEach(function(th,row){
   const y=AH+row*RH;g.fillStyle=row%2?'#fafafa':'#fff';g.fillRect(0,y,W,RH);
   g.fillStyle='#222';g.save();g.beginPath();g.rect(0,y,LW-4,RH);g.clip();
   g.fillText(th.name+' ('+th.tid+')',4,y+RH/2);g.restore();
   acc.fill(0);const iv=th.iv,n=iv.length/3;
   let lo=0,hi=n;while(lo<hi){const m=(lo+hi)>>1;if(iv[3*m]+iv[3*m+1]<t0)lo=m+1;else hi=m;}
   for(let i=lo;i<n;i++){const s=iv[3*i];if(s>t1)break;const e=s+iv[3*i+1],st=iv[3*i+2];
    const a=Math.max(s,t0),b=Math.min(e,t1);if(b<=a)continue;
    const x0=(a-t0)*sc,x1=(b-t0)*sc;let p=Math.floor(x0);const pe=Math.min(PW-1,Math.ceil(x1)-1);
    for(;p<=pe;p++){const cov=Math.min(x1,p+1)-Math.max(x0,p);if(cov>0)acc[p*NS+st]+=cov;}}
   let runStart=-1,runState=-1;
   for(let p=0;p<=PW;p++){let best=-1,bv=0;
    if(p<PW){for(let s=0;s<NS;s++){const v=acc[p*NS+s];if(v>bv){bv=v;best=s;}}}
    if(best!==runState){if(runState>=0){g.fillStyle=COLOR[STATES[runState]]||'#000';
      g.fillRect(LW+runStart,y+2,p-runStart,RH-4);}runStart=p;runState=best;}}
  });
 }
 function at(ev){const r=c.getBoundingClientRect();return [ev.clientX-r.left,ev.clientY-r.top];}
 let drag=null;
 c.addEventListener('wheel',function(ev){ev.preventDefault();const [x]=at(ev);if(x<LW)return;
  const tm=t0+(x-LW)/PW*(t1-t0),f=Math.exp(ev.deltaY*0.002);
  let n0=tm-(tm-t0)*f,n1=tm+(t1-tm)*f;if(n1-n0<1000){return;}
  t0=Math.max(0,n0);t1=Math.min(tr.duration,n1);if(t1<=t0){t0=0;t1=tr.duration;}draw();},{passive:false});
 c.addEventListener('mousedown',function(ev){drag={x:at(ev)[0],t0:t0,t1:t1};});
 window.addEventListener('mouseup',function(){drag=null;});
 c.addEventListener('dblclick',function(){t0=0;t1=tr.duration;draw();});
 c.addEventListener('mouseleave',hideTip);
 c.addEventListener('mousemove',function(ev){const [x,y]=at(ev);
  if(drag){const dt=(x-drag.x)/PW*(drag.t1-drag.t0);let a=drag.t0-dt,b=drag.t1-dt;
   if(a<0){b-=a;a=0;}if(b>tr.duration){a-=b-tr.duration;b=tr.duration;}t0=Math.max(0,a);t1=b;draw();return;}
  const row=Math.floor((y-AH)/RH);if(x<LW||row<0||row>=tr.threads.length){hideTip();return;}
  const th=tr.threads[row],tm=t0+(x-LW)/PW*(t1-t0),iv=th.iv,n=iv.length/3;
  let lo=0,hi=n;while(lo<hi){const m=(lo+hi)>>1;if(iv[3*m]+iv[3*m+1]<tm)lo=m+1;else hi=m;}
  let text=th.name+' (tid '+th.tid+') at '+dur(tm);
  if(lo<n&&iv[3*lo]<=tm)text+='\n'+STATES[iv[3*lo+2]]+' from '+dur(iv[3*lo])+' for '+dur(iv[3*lo+1]);
  showTip(ev,text);});
 draw();
}

function icicle(parent,tr){
 const root={name:'all blocking',value:0,kids:new Map()};
 tr.sites.forEach(function(s){root.value+=s.total;let node=root;
  const path=[s.kind].concat(s.frames.slice().reverse());
  path.forEach(function(name){let k=node.kids.get(name);if(!k){k={name:name,value:0,kids:new Map()};
   node.kids.set(name,k);}k.value+=s.total;node=k;});});
 let depth=0;(function d(n,l){depth=Math.max(depth,l);n.kids.forEach(function(k){d(k,l+1);});})(root,1);
 const W=Math.max(600,Math.min(1600,document.body.clientWidth-40)),RH=18,H=Math.max(1,depth)*RH+2;
 const [c,g]=canvasOf(parent,W,H);const boxes=[];
 g.font='11px sans-serif';g.textBaseline='middle';
 (function lay(n,x,w,l){if(w<0.5)return;const y=l*RH;
  g.fillStyle=l===0?'#9e9e9e':(COLOR[n.name]||('hsl('+(20+(n.name.length*37)%40)+',75%,'+(62+l%3*6)+'%)'));
  g.fillRect(x,y,w-1,RH-1);boxes.push([x,y,w,n]);
  if(w>30){g.fillStyle='#111';g.save();g.beginPath();g.rect(x,y,w-2,RH);g.clip();
   g.fillText(n.name+' '+dur(n.value),x+3,y+RH/2);g.restore();}
  let cx=x;Array.from(n.kids.values()).sort(function(a,b){return b.value-a.value;}).forEach(function(k){
   const kw=root.value>0?w*k.value/n.value:0;lay(k,cx,kw,l+1);cx+=kw;});})(root,0,W,0);
 c.addEventListener('mousemove',function(ev){const r=c.getBoundingClientRect(),x=ev.clientX-r.left,y=ev.clientY-r.top;
  for(const b of boxes){if(x>=b[0]&&x<b[0]+b[2]&&y>=b[1]&&y<b[1]+RH){
   showTip(ev,b[3].name+'\n'+dur(b[3].value)+' ('+(100*b[3].value/Math.max(1,root.value)).toFixed(1)+'% of blocking)');return;}}
  hideTip();});
 c.addEventListener('mouseleave',hideTip);
}

function heap(parent,tr){
 const h=tr.heap;if(h.length<2){el('div',{className:'hint',textContent:'no heap records'},parent);return;}
 const W=Math.max(600,Math.min(1600,document.body.clientWidth-40)),H=160,L=70;
 const [c,g]=canvasOf(parent,W,H);let peak=1;for(let i=1;i<h.length;i+=2)peak=Math.max(peak,h[i]);
 const top=peak*1.1;
 g.fillStyle='#fff';g.fillRect(0,0,W,H);g.strokeStyle='#ccc';g.strokeRect(L,10,W-L-10,H-30);
 g.fillStyle='#444';g.font='11px sans-serif';g.fillText(size(peak),4,14);g.fillText('0',4,H-20);
 g.fillText(dur(tr.duration),W-70,H-6);
 const x=function(t){return L+(W-L-10)*t/tr.duration;},y=function(b){return 10+(H-30)*(1-b/top);};
 g.strokeStyle='#1565c0';g.lineWidth=1.5;g.beginPath();g.moveTo(x(h[0]),y(h[1]));
 for(let i=2;i<h.length;i+=2){g.lineTo(x(h[i]),y(h[i-1]));g.lineTo(x(h[i]),y(h[i+1]));}
 g.lineTo(x(tr.duration),y(h[h.length-1]));g.stroke();
 // One or two samples (a process whose heap moved little is sampled at its end): dots, as a
 // line from the last sample to the end has no length there.
 if(h.length<=4){g.fillStyle='#1565c0';for(let i=0;i<h.length;i+=2)g.fillRect(Math.min(x(h[i]),W-13)-3,y(h[i+1])-3,6,6);}
 c.addEventListener('mousemove',function(ev){const r=c.getBoundingClientRect(),t=(ev.clientX-r.left-L)/(W-L-10)*tr.duration;
  let v=0;for(let i=0;i<h.length&&h[i]<=t;i+=2)v=h[i+1];showTip(ev,dur(Math.max(0,t))+': '+size(v));});
 c.addEventListener('mouseleave',hideTip);
}

const root=document.getElementById('root');
D.traces.forEach(function(tr){
 el('h1',{textContent:'gotrace report: '+tr.file},root);
 el('div',{className:'info',textContent:dur(tr.duration)+', '+tr.threads.length+(tr.threads.length==1?' thread':' threads')+(tr.info?'; '+tr.info:'')},root);
 el('h2',{textContent:'Threads over time'},root);
 const lg=el('div',{className:'legend'},root);
 const used=new Set();tr.threads.forEach(function(th){for(let i=2;i<th.iv.length;i+=3)used.add(th.iv[i]);});
 STATES.forEach(function(s,i){if(!used.has(i))return;const sp=el('span',{},lg);
  el('i',{},sp).style.background=COLOR[s]||'#000';sp.appendChild(document.createTextNode(s));});
 el('div',{className:'hint',textContent:'wheel: zoom, drag: pan, double-click: whole trace, hover: details'},root);
 timeline(root,tr);
 el('h2',{textContent:'Top blocking sites (kind, then callers to callee)'},root);
 if(tr.sites.length)icicle(root,tr);else el('div',{className:'hint',textContent:'no blocking'},root);
 if(tr.idle.length){el('h2',{textContent:'Idle waits (threads that spent their lives waiting: pools, event loops)'},root);
  icicle(root,{sites:tr.idle});}
 el('h2',{textContent:'Heap'},root);
 heap(root,tr);
});
if(!document.title.startsWith('gotrace report: ERROR'))document.title='gotrace report: OK';
})();
</script>
</body></html>
)HTML";

}  // namespace

std::string FormatHtml(const std::vector<Report>& reports, size_t top) {
  return std::string(kHead) + Data(reports, top) + kTail;
}

}  // namespace gotrace::report
