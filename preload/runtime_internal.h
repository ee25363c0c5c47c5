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
#include "preload/runtime.h"

namespace gotrace::internal {

inline constexpr uint32_t kMaxThreads = 1u << 16;  // registered at once

// --- The pool of thread records ----------------------------------------------
bool PoolInit(size_t buffer_kb);       // reserves the memory (once per process)
uint32_t PoolUsed();                   // high-water mark of slots
ThreadRec* PoolSlot(uint32_t i);
// In a forked child: every record belongs to the parent; start empty.
void PoolResetForChild();

bool DepotInit();                      // (re)creates the stack depot
bool KeyCreate();                      // the thread-exit key (H25)

// --- Writing the log ------------------------------------------------------------
// Writes a sealed chunk at a freshly reserved offset. `final_flush`: the exit
// path itself, which writes after the phase left kReady.
bool WriteChunk(const log::SealedChunk& c, bool final_flush);
void AppendClockSync(log::ChunkWriter* w, uint32_t cpu);
// Resets every log counter (a new log file).
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
void ProcInit(Tick base);              // an empty process stream
log::ChunkWriter& ProcWriter();        // under ProcLock
uint32_t ProcSeq();                    // seq of the current process chunk
void ProcFlush(bool final_flush);      // under ProcLock
void ProcReserve(size_t n, bool final_flush);
// Rescans loaded objects, recording loads and unloads (under ProcLock).
void RescanLocked(bool after_unload, bool only_if_changed, bool final_flush);
void ModulesReset();                   // forget every known module (new log)

// --- Snapshots --------------------------------------------------------------------
// Writes what thread record r committed in its current chunk, as that chunk,
// plus the wait it is blocked in, if any, as an open wait (with its stack,
// unwound remotely for system calls). The owner may be running: the copy is
// discarded if the owner reset its buffer meanwhile (chunk_gen changed).
// `scratch` must hold the record's buffer plus 4 KiB. Returns the records
// written (0 if nothing or a race).
uint32_t SnapshotRec(ThreadRec* r, uint8_t* scratch, size_t scratch_bytes, bool snapshot_flag,
                     bool final_flush);

// Our code's address range and directory (dladdr), found once.
void FindSelf();

}  // namespace gotrace::internal
