// SPDX-License-Identifier: Apache-2.0
//===-- preload/lifecycle.h - what the lifecycle interposers call ---------===//
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>

#include "encoder/quiet_journal.h"

namespace gotrace {

// _exit, _Exit: the final flush and encode (a vfork child passes through).
void FinishProcess();
// True in a vfork child (pid changed, memory shared): touch nothing (H14).
bool IsVforkChild();
// exec: finalize this image before the real call; start again if it fails.
void BeforeExec();
void AfterFailedExec();
// The first spill of a forked child starts its flusher thread.
void MaybeStartFlusher();
// Whether the flusher thread runs (it reads the kernel's records; without
// it, recording threads do, see ClockSyncSlow).
bool FlusherRunning();
// Every 10 ms of a thread's recording (ClockSyncSlow): with GOTRACE_SCHED=
// auto, a one-thread process's kernel records start once it has run 10 ms.
void KernelSchedTick(uint64_t now_ticks);
// The program's threads: AppThreadCreating() before pthread_create (then
// AppThreadCreateFailed() if it fails), AppThreadStarted() first thing in the
// new thread. The count drops when a thread ends by any means (a
// thread-specific key's destructor); at zero the flusher ends, so that
// glibc's own count of threads reaches zero and the process exits.
void AppThreadCreating();
void AppThreadCreateFailed();
void AppThreadStarted();

// Crash signals: while our handlers are installed, the program's sigaction
// and signal calls for these signals are kept for chaining instead of
// replacing our handler.
bool CrashSignalInterposed(int sig);
int CrashSigaction(int sig, const struct sigaction* act, struct sigaction* old);

// The environment for an exec'd or spawned child: the caller's, plus
// GOTRACE_ROOT_PID and GOTRACE_IMAGE (so the child knows its name), or, with
// GOTRACE_FOLLOW=0, without our library in LD_PRELOAD. Lives on the caller's
// stack: safe in a vfork child. False if the environment is too large (the
// caller then passes it unchanged).
//
// Sized to the environment at hand (GT_EXEC_ENV): a fixed 36 KiB (4096
// pointers and a 4 KiB LD_PRELOAD) made the exec hook's frame 41 KiB deep,
// and every page of it a shell's fork child wrote before its exec was one
// more page fault (issue 18: three per command of a traced shell job).
struct ExecEnv {
  static constexpr size_t kMax = 4096;         // pointers at most
  static constexpr size_t kMaxPreload = 4096;  // LD_PRELOAD=... at most
  char** ptrs = nullptr;  // room for `cap` pointers
  size_t cap = 0;
  char* preload = nullptr;  // room for `preload_cap` bytes
  size_t preload_cap = 0;
  char root[48];
  char image[64];
  char ncpus[40];
  char asan[1024];  // ASAN_OPTIONS=...:verify_asan_link_order=0 (AsanOptions)
};
// The room ExecEnvironment needs for envp: pointers (its entries and ours,
// at most kMax) and bytes for a copy of its LD_PRELOAD (at most kMaxPreload).
void ExecEnvRoom(char* const* envp, size_t* ptrs, size_t* preload_bytes);
// Declares `ExecEnv name` for envp, its room on the caller's stack.
#define GT_EXEC_ENV(name, envp)                                                      \
  ::gotrace::ExecEnv name;                                                           \
  {                                                                                  \
    size_t gt_ptrs_, gt_bytes_;                                                      \
    ::gotrace::ExecEnvRoom((envp), &gt_ptrs_, &gt_bytes_);                           \
    name.ptrs = static_cast<char**>(__builtin_alloca(gt_ptrs_ * sizeof(char*)));    \
    name.cap = gt_ptrs_;                                                             \
    name.preload = static_cast<char*>(__builtin_alloca(gt_bytes_));                  \
    name.preload_cap = gt_bytes_;                                                    \
  }
// untraced: leave our library out (as GOTRACE_FOLLOW=0 does), for a
// program the run learned quiet (SkipTracing). same_process: an exec of this
// process (not a spawn, nor a vfork child's exec): with GOTRACE_FOLLOW=0 the
// run's first process keeps the library across it (`sh -c 'exec prog'`,
// `env prog`, a `#!/usr/bin/env node` script are the program).
bool ExecEnvironment(char* const* envp, ExecEnv* env, bool untraced = false,
                     bool same_process = false);
// Whether an exec with `envp` leaves our library out where it would follow
// (the program made the environment itself: `env -i`, a subprocess's env=):
// the new image runs untraced, and is listed so (log::kQuietNoPreload).
bool EnvLeavesUsOut(char* const* envp);

// Descriptors an exec hook keeps for the exec to close (SkipTracing).
struct ExecFds {
  // Two stores, not one of a constant the compiler keeps in our read-only
  // data for both: its page was one more fault in every fork child.
  ExecFds() {
    __atomic_store_n(&learn, -1, __ATOMIC_RELAXED);
    __atomic_store_n(&journal, -1, __ATOMIC_RELAXED);
  }
  int learn;
  int journal;
};

// Issue 18 (preload/learn.h): whether SkipTracing can say yes at all here
// (the launcher's learn table, children followed): the exec hooks look
// their program up only then.
bool LearnActive();
// Whether the command `path` (absolute, as it is about to be exec'd or
// spawned, looked up because LearnActive()) with `argv`, in this working
// directory, runs untraced: the launcher's run learned it quiet, and this is
// not the run's own program. Raw system calls only (vfork children).
// *who: the command's keys in the learn table (set either way).
// `kept` (an exec about to happen, else null): when the answer is yes, the
// learn table's descriptor (close-on-exec) is left open there for
// NoteUntraced, as the exec closes it: a shell's fork child opened the
// table twice and the journal once before each learned command.
bool SkipTracing(const char* path, char* const* argv, log::LearnPid* who, ExecFds* kept = nullptr);
// The journal entry of a program that runs untraced (pid, image), written by
// whoever starts it: log::kQuietSkipped, or log::kQuietRetract when the exec
// that was to start it failed. `who` (a skipped one learned quiet, else
// nullptr): its keys, for pid's record in the learn table (learn::NotePid).
// `kept`: the descriptors SkipTracing left, and the journal's, left open
// (close-on-exec) for the exec to close; CloseExecFds after a failed one.
void NoteUntraced(int pid, int ppid, uint32_t image, uint64_t start_ns, uint32_t flags,
                  const char* exe, char* const* argv, const log::LearnPid* who,
                  ExecFds* kept = nullptr);
void CloseExecFds(ExecFds* kept);
// A child process was made without fork (posix_spawn, vfork): this program
// is never learned quiet.
void NoteMadeChild();
// The image number an exec by process `pid` starts: this image's plus one
// in this process, 0 in another (a vfork child, as ReadLineage decides).
uint32_t NextImage(int pid);
// The calling process's parent as the run knows it: the one it had when it
// began (its fork, its lineage), else getppid's answer.
int ParentPid();

// Trace windows (issue 16), for the control channel (preload/control.cc):
// each writes one line for the client into `reply` ("ok: ..." or
// "error: ...") and returns whether it succeeded. Never from a hook.
namespace sys { class Line; }
bool WindowStart(sys::Line* reply);  // paused -> recording into OUT.w<n+1>
bool WindowStop(sys::Line* reply);   // recording -> paused; writes OUT.w<n>
void WindowStatus(sys::Line* reply);

}  // namespace gotrace
