// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/run_index.cc - a small JSON reader for the index ---===//
//
// A recursive-descent JSON parser just big enough for the run index (RFC
// 8259 values; nesting limited to 64 levels so hostile input cannot exhaust
// the stack), then the few keys the report needs.
//===----------------------------------------------------------------------===//
#include "encoder/report/run_index.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <utility>

namespace gotrace::report {
namespace {

struct JValue {
  enum Type { kNull, kBool, kNum, kStr, kArr, kObj } type = kNull;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<JValue> arr;
  std::vector<std::pair<std::string, JValue>> obj;
  const JValue* Get(const std::string& key) const {
    for (const auto& [k, v] : obj)
      if (k == key) return &v;
    return nullptr;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  bool Parse(JValue* v) {
    if (!Value(v, 0)) return false;
    Space();
    return i_ == s_.size() || Bad();
  }
  size_t offset() const { return i_; }

 private:
  bool Bad() { return false; }
  void Space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool Lit(const char* w) {
    const std::string lit(w);
    if (s_.compare(i_, lit.size(), lit) != 0) return false;
    i_ += lit.size();
    return true;
  }
  static void Utf8(std::string* o, uint32_t c) {
    if (c < 0x80) {
      *o += static_cast<char>(c);
    } else if (c < 0x800) {
      *o += static_cast<char>(0xc0 | (c >> 6));
      *o += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      *o += static_cast<char>(0xe0 | (c >> 12));
      *o += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      *o += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      *o += static_cast<char>(0xf0 | (c >> 18));
      *o += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
      *o += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      *o += static_cast<char>(0x80 | (c & 0x3f));
    }
  }
  bool Hex4(uint32_t* c) {
    if (i_ + 4 > s_.size()) return false;
    *c = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      *c <<= 4;
      if (h >= '0' && h <= '9') *c |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') *c |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') *c |= static_cast<uint32_t>(h - 'A' + 10);
      else return false;
    }
    return true;
  }
  bool String(std::string* o) {
    if (i_ >= s_.size() || s_[i_] != '"') return false;
    ++i_;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        *o += c;
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      switch (e) {
        case '"': case '\\': case '/': *o += e; break;
        case 'b': *o += '\b'; break;
        case 'f': *o += '\f'; break;
        case 'n': *o += '\n'; break;
        case 'r': *o += '\r'; break;
        case 't': *o += '\t'; break;
        case 'u': {
          uint32_t c1;
          if (!Hex4(&c1)) return false;
          if (c1 >= 0xd800 && c1 < 0xdc00 && s_.compare(i_, 2, "\\u") == 0) {
            i_ += 2;
            uint32_t c2;
            if (!Hex4(&c2) || c2 < 0xdc00 || c2 >= 0xe000) return false;
            c1 = 0x10000 + ((c1 - 0xd800) << 10) + (c2 - 0xdc00);
          } else if (c1 >= 0xdc80 && c1 <= 0xdcff) {
            *o += static_cast<char>(c1 & 0xff);  // a byte that was not UTF-8 (encoder/printable.h)
            break;
          }
          Utf8(o, c1);
          break;
        }
        default: return false;
      }
    }
    return false;
  }
  bool Value(JValue* v, int depth) {
    if (depth > 64) return false;
    Space();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') {
      v->type = JValue::kObj;
      ++i_;
      Space();
      if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
      for (;;) {
        Space();
        std::string key;
        if (!String(&key)) return false;
        Space();
        if (i_ >= s_.size() || s_[i_] != ':') return false;
        ++i_;
        JValue item;
        if (!Value(&item, depth + 1)) return false;
        v->obj.emplace_back(std::move(key), std::move(item));
        Space();
        if (i_ < s_.size() && s_[i_] == ',') { ++i_; continue; }
        if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
        return false;
      }
    }
    if (c == '[') {
      v->type = JValue::kArr;
      ++i_;
      Space();
      if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
      for (;;) {
        JValue item;
        if (!Value(&item, depth + 1)) return false;
        v->arr.push_back(std::move(item));
        Space();
        if (i_ < s_.size() && s_[i_] == ',') { ++i_; continue; }
        if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
        return false;
      }
    }
    if (c == '"') {
      v->type = JValue::kStr;
      return String(&v->str);
    }
    if (Lit("true")) { v->type = JValue::kBool; v->b = true; return true; }
    if (Lit("false")) { v->type = JValue::kBool; return true; }
    if (Lit("null")) { v->type = JValue::kNull; return true; }
    const size_t start = i_;
    while (i_ < s_.size() && std::string("+-0123456789.eE").find(s_[i_]) != std::string::npos) ++i_;
    if (i_ == start) return false;
    const std::string num = s_.substr(start, i_ - start);
    char* end = nullptr;
    v->type = JValue::kNum;
    v->num = std::strtod(num.c_str(), &end);
    return end == num.c_str() + num.size();
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace

bool LooksLikeJson(const std::string& head) {
  for (char c : head) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{';
  }
  return false;
}

Status ReadRunIndex(const std::string& path, std::vector<IndexedProcess>* out) {
  out->clear();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot read");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  JValue root;
  Parser p(text);
  if (!p.Parse(&root))
    return Status::Error("not a run index: bad JSON at offset " + std::to_string(p.offset()));
  const JValue* version = root.type == JValue::kObj ? root.Get("version") : nullptr;
  const JValue* procs = root.type == JValue::kObj ? root.Get("processes") : nullptr;
  // The placeholder a run's launcher makes as it starts ({"version": 1,
  // "running": "tracewrap (pid N) writes this index when its program
  // ends"}): still running, or killed before it could write the index.
  if (const JValue* running = root.type == JValue::kObj ? root.Get("running") : nullptr;
      !procs && running != nullptr && running->type == JValue::kStr) {
    return Status::Error("not written yet: " + running->str +
                         " (a launcher killed before that leaves this placeholder; its "
                         "processes' traces, if any, are next to it)");
  }
  if (!version || version->type != JValue::kNum || !procs || procs->type != JValue::kArr)
    return Status::Error("not a run index (no \"version\" and \"processes\")");
  if (version->num != 1)
    return Status::Error("run index version " + std::to_string(static_cast<long long>(version->num)) +
                         " is not supported (only version 1)");
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  for (const JValue& pv : procs->arr) {
    if (pv.type != JValue::kObj) return Status::Error("run index: a process is not an object");
    IndexedProcess ip;
    if (const JValue* v = pv.Get("pid"); v && v->type == JValue::kNum) ip.pid = static_cast<int64_t>(v->num);
    if (const JValue* v = pv.Get("ppid"); v && v->type == JValue::kNum) ip.ppid = static_cast<int64_t>(v->num);
    if (const JValue* v = pv.Get("argv"); v && v->type == JValue::kArr)
      for (const JValue& a : v->arr)
        if (a.type == JValue::kStr) ip.argv.push_back(a.str);
    if (const JValue* v = pv.Get("trace"); v && v->type == JValue::kStr && !v->str.empty())
      ip.trace = v->str[0] == '/' ? v->str : dir + v->str;
    if (const JValue* v = pv.Get("windows"); v && v->type == JValue::kArr)
      for (const JValue& w : v->arr)
        if (w.type == JValue::kStr && !w.str.empty())
          ip.windows.push_back(w.str[0] == '/' ? w.str : dir + w.str);
    out->push_back(std::move(ip));
  }
  return Status::Ok();
}

}  // namespace gotrace::report
