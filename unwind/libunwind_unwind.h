// SPDX-License-Identifier: Apache-2.0
//===-- unwind/libunwind_unwind.h - DWARF CFI unwinding through libunwind -===//
//
// GOTRACE_UNWIND=libunwind: stacks through code built without frame pointers,
// from the .eh_frame unwind tables, with libunwind's unw_backtrace (its
// cached fast trace: about 7 ns a frame more than frame pointers once warm,
// DESIGN.md §5).
//
// libunwind is never linked: libgotrace.so does not need it, and it is loaded
// at init with dlopen(RTLD_LOCAL) only in this mode, because Debian's
// libunwind.so.8 defines the 36 _Unwind_* functions of the C++ exception ABI;
// in the global scope they would take over the program's exception handling
// from libgcc_s (H32). Only the headers are used, for the functions' types
// and names.
//
// What a walk may do (libunwind 1.6, x86_64; checked by
// test/scenarios/stacks_libunwind_probe.cc):
//  - It never calls malloc once the calling thread has walked once: the first
//    walk on a thread allocates libunwind's thread-local block (malloc, via
//    __tls_get_addr) and its frame cache (256 KiB, mmap, until the thread
//    exits). LibunwindPrepareThread does that at a moment the caller chooses.
//  - Later walks may mmap (the frame cache grows past 8192 distinct PCs), take
//    libunwind's internal mutexes (always with every signal blocked, so a
//    handler on the same thread cannot deadlock on them) and call
//    dl_iterate_phdr (glibc's loader write lock, which dlopen holds only while
//    it links the new object into the list, never across constructors: H21).
//  - __tls_get_addr may still call malloc after the program dlopen's another
//    library with TLS (glibc grows the thread's DTV).
// So it is not async-signal-safe in general (H17, gperftools#947): the caller
// uses it only outside signal handlers, as far as it can tell (a hook whose
// frame is not on the thread's own stack runs on a sigaltstack: frame pointers
// there), and never inside another tracer scope.
//
// Problem: libunwind never forgets unwind information. Its global cache of
// register rules and each thread's frame cache (unw_backtrace's) are keyed by
// address only; after a dlclose, code loaded at the same addresses is walked
// with the unloaded code's rules: wrong frames, or reads through a garbage
// frame address (the fast trace does not validate them: a crash). The global
// cache is flushed with unw_flush_cache, but no interface reaches another
// thread's frame cache. So LibunwindUnloaded flushes the global cache and, when
// the unloaded code had been walked, starts a new generation; a thread whose
// frame cache is older than the current generation is refused (its walks
// return 0: the caller falls back to frame pointers), threads that start
// walking later use libunwind. The generation of each thread's cache is kept
// by the caller (`thread_gen`, zero for a thread that has not walked).
//
// Problem: libunwind opens a pipe the first time it unwinds (it validates
// addresses by write()ing one byte from them into it). pipe2 returns the
// lowest free descriptors, 3 and 4 in a fresh process, which the program
// expects to get from its own first open(); and a program that closes every
// descriptor and opens files would have libunwind read from and write to its
// files. LibunwindInit therefore makes libunwind open the pipe while every
// descriptor below kLibunwindFdFloor is taken (temporarily), and the tracer
// guards the two descriptors like its own (IsLibunwindFd: close(),
// close_range()); a program that dup2()s onto one of them ends libunwind's
// use (LibunwindFdLost).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace gotrace::unwind {

// libunwind's pipe lands at or above this descriptor (the tracer's own
// descriptors are at 512 and above, H27), unless RLIMIT_NOFILE is lower.
inline constexpr int kLibunwindFdFloor = 520;

// Loads libunwind.so.8 (RTLD_LOCAL | RTLD_NOW), resolves what it needs and
// walks the calling thread's stack once, which initialises libunwind (its
// pipe, its caches, this thread's frame cache). False, with a reason for the
// user in *why, if libunwind is not available. Call once, from the library
// constructor, inside a tracer scope (dlopen allocates), before any thread
// can call LibunwindBacktrace; later calls return the first call's answer.
bool LibunwindInit(const char** why);

// Whether LibunwindInit succeeded.
bool LibunwindReady();

// Return addresses of the calling thread's stack, innermost first: pcs[0] is
// the return address into the function that called LibunwindBacktrace (the
// caller's own frames are included; the caller drops tracer frames). At most
// max. `thread_gen` is the calling thread's own word (zero-initialised, never
// shared): 0 if libunwind is not loaded, or if this thread's frame cache may
// hold unwind information of unloaded code (see "Problem:" above); the caller
// then walks frame pointers. No malloc once the thread has walked once.
size_t LibunwindBacktrace(uint64_t* pcs, size_t max, uint32_t* thread_gen);

// Does the calling thread's first walk now, on a thread that has not walked
// (its frame cache is new): its allocations (libunwind's TLS block, malloc;
// the 256 KiB frame cache, mmap; about 0.1 ms) then happen here rather than
// in its first LibunwindBacktrace, which could run in a signal handler that
// interrupted malloc (a deadlock). Optional.
void LibunwindPrepareThread(uint32_t* thread_gen);

// After the program unloaded a library (dlclose): forgets what libunwind
// cached about its code. `walked`: whether a captured stack ever held a PC in
// it (only then can threads' frame caches hold its rules); when in doubt,
// true. Safe while other threads walk.
void LibunwindUnloaded(bool walked);

// Whether fd is one of the descriptors libunwind opened during LibunwindInit
// (its address-validation pipe). The tracer keeps the program from closing
// them, as it does its own (H27).
bool IsLibunwindFd(int fd);
// The same descriptors, -1 where none.
void LibunwindFds(int fds[2]);
// The program is replacing one of them (dup2 onto its number): libunwind
// would read and write the program's file, and its descriptors cannot be
// moved. Walks return 0 from now on (frame pointers), and the descriptors
// are no longer the tracer's.
void LibunwindFdLost();

}  // namespace gotrace::unwind
