// SPDX-License-Identifier: Apache-2.0
//===-- preload/runtime_internal.h - between recording and the lifecycle -===//
//
// runtime.cc owns recording: the pool of thread records, chunk writing, the
// stack depot, the process stream and the module map. lifecycle.cc owns the
// process's states (start, fork, exec, exit, crash, periodic flushes) and
// uses these pieces. Not for the interposers.
//===----------------------------------------------------------------------===//
#pragma once

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "encoder/log_writer.h"
#include "encoder/quiet_journal.h"
#include "preload/runtime.h"

namespace gotrace::internal {

// Threads registered at once (records are reused as threads end). Problem:
// the pool reserves address space for all of them up front (a record and a
// slot each, 76 KiB at the default buffer), and a program that limits its
// own address space after starting inherits the reservation: 65,536 made
// 5 GiB, and chromium's sandboxed storage service, which sets such a
// limit, then failed an allocation and crashed (14 crash reports in one
// headless run). 8,192 make 600 MiB; the threads beyond are counted as
// untraced.
inline constexpr uint32_t kMaxThreads = 1u << 13;

// --- The pool of thread records ----------------------------------------------
bool PoolInit(size_t buffer_kb);       // reserves the memory (once per process); sets g.slot_bytes
// In a fork child, first thing: releases the tracer's locks that another
// thread of the parent held at the fork (runtime.cc).
void UnlockAfterFork();
uint32_t PoolUsed();                   // high-water mark of slots
ThreadRec* PoolSlot(uint32_t i);
// In a forked child (or after a failed exec): every record and window
// belongs to the parent's (the finished image's) log; start empty.
void PoolResetForChild();
// A fork child: forgets the parent's records at once, and replaces the
// region (PoolResetForChild) only when it starts a log (PoolResetIfForked).
// `keep_slot`: the calling thread's record, when the child records, takes
// the slot its record had in the parent (a hook scope of the parent's
// that resumes in the child writes to the record it holds: AtForkChild).
void PoolForgetForChild(bool keep_slot);
void PoolResetIfForked();

// The stack depot (and the unwinder's row cache): DepotInit asks for a new
// one, made by the first EnsureDepot (a stack walk, an interned stack).
// False (the stack goes without) if it cannot be made.
void DepotInit();
bool EnsureDepotSlow();
inline bool EnsureDepot() {
  extern std::atomic<int> g_depot_state;
  return __builtin_expect(g_depot_state.load(std::memory_order_acquire) == 3, 1) || EnsureDepotSlow();
}
bool KeyCreate();                      // the thread-exit key (H25)

// --- Writing the log ------------------------------------------------------------
// Maps a fresh slot of the log at the stream's window and opens a chunk
// there; false (and the stream writes nothing) when recording stopped or the
// slot could not be had. `final_flush`: the exit path itself, which writes
// after the phase left kReady.
bool StreamBegin(SlotStream* s, Tick base, bool final_flush);
// Seals the stream's chunk in place.
void StreamSeal(SlotStream* s);
// A full chunk: copies it out of the home slot and opens the next there.
bool StreamSpill(SlotStream* s, bool final_flush);
// The kernel stream (kernel_sched.cc writes it, under its own lock).
SlotStream* KernelStream();
// Stops recording for good in this log, with one line saying why.
void StopRecording(const char* why);
// Staging: every stream written in memory moves to a slot of the log file
// just made (g.log_fd), keeping what it recorded. False if one could not.
bool MaterializeStreams();
// Staging: the records a staged process made (in memory), and the
// children it reaped (up to log::kQuietMaxChildren), for its journal entry.
uint64_t StagedSummary(log::QuietChild* kids, uint32_t* nkids);
// Shrinks the file to the slots handed out (it grows ahead of need).
void TruncateLog();
void AppendClockSync(log::ChunkWriter* w, uint32_t cpu);
// Resets every log counter (a new log file) and moves the log generation.
void ResetLogState();

// --- The process stream -----------------------------------------------------------
class ProcLock {
 public:
  ProcLock();
  ~ProcLock();
  struct Try {};
  explicit ProcLock(Try);  // never waits (hooks, signal handlers)
  bool held() const { return held_; }
  ProcLock(const ProcLock&) = delete;
  ProcLock& operator=(const ProcLock&) = delete;

 private:
  bool held_ = true;
};
void ProcInit(Tick base);              // an empty process stream (in the new log)
log::ChunkWriter& ProcWriter();        // under ProcLock
void ProcCommit();                     // makes what ProcWriter() wrote part of the log
void ProcFlush(bool final_flush);      // under ProcLock: seal, continue in a new slot
void ProcEnd();                        // under ProcLock: seal (the log's last chunk)
void ProcReserve(size_t n, bool final_flush);
// Rescans loaded objects, recording loads and unloads (under ProcLock).
// `force_code_map`: rebuild the unwinder's code map even if the loader's
// counters did not move (false: a fork child's, the same as its parent's).
void RescanLocked(bool after_unload, bool only_if_changed, bool final_flush,
                  bool force_code_map = true);
void ModulesReset(bool populate);      // forget every known module (new log)
// Staging: the module list and the unwinder's code map are made when first
// needed (EnsureModules: a stack walk, the log's materialization).
void ModulesLater();
void EnsureModules();

// Interns a stack in the process's stack depot (lock-free); 0 if full.
uint32_t InternStack(const uint64_t* pcs, size_t n, uint32_t epoch, bool* fresh);

// --- The flight recorder (issue 16) ------------------------------------------
void FlightPush(uint32_t slot, uint64_t end_ns);  // a copied-out chunk, droppable later
void FlightTrim(bool can_wait);  // drops chunks older than GOTRACE_FLIGHT (or past its size)

// --- Trace windows (issue 16) ----------------------------------------------------
// A thread alive when a window opens, as its stand-in stream shows it.
struct StandInThread {
  uint32_t tid = 0;
  uint32_t cpu = 0;
  Tick ts = 0;              // the window's start
  uintptr_t start_pc = 0;
  uint64_t self = 0;
  uint64_t flags = 0;       // log::kThreadMain
  char name[17] = {0};
  size_t name_len = 0;
  uint32_t wait_kind = 0;   // the wait it is blocked in (0: none)
  uint64_t wait_obj = 0, wait_aux = 0, wait_flags = 0;
  uint32_t wait_stack = 0;  // its id; defined with the PCs below if stack_n > 0
  uint32_t stack_epoch = 0;
  const uint64_t* stack_pcs = nullptr;
  size_t stack_n = 0;
};
void StandInsReset();                    // a new window's log: no stand-ins yet
bool WriteStandIn(const StandInThread& t);  // its one-chunk stream in the current log
uint32_t StandInSerial(uint32_t tid);    // the stand-in's serial in the current log, or 0
uint32_t StandInCount();                 // stand-ins written in the current log
void StandInAt(uint32_t i, uint32_t* tid, uint32_t* serial);
ThreadRec* FindRecordOf(uint32_t tid);   // the record of live thread tid, if it has one
// A stack id of an earlier log: its PCs, if log_gen still lacks its definition.
bool RedefineStack(uint32_t id, uint32_t log_gen, const uint64_t** pcs, size_t* n, uint32_t* epoch);

// Our code's address range and directory (dladdr), found once.
void FindSelf();
// This image's executable (/proc/self/exe), read once. Async-signal-safe.
const char* ExePath();
// The process record (kProcessInfo) now; `wait`: for the process lock (else
// only if it is free: skipped if this thread holds it).
void WriteProcessInfo(int argc, char** argv, bool wait);
// The same with the process stream's lock held by the caller.
void WriteProcessInfoLocked(int argc, char** argv);
// The arguments a process record keeps (and 4096 bytes of them).
inline constexpr size_t kMaxArgs = 64;
// Copies main's arguments (NoteProcessArgs's copy, cut at kMaxArgs
// arguments and 4096 bytes); returns how many were kept.
int SnapshotArgs(int argc, char** argv);

}  // namespace gotrace::internal
