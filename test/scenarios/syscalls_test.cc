// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/syscalls_test.cc - every way a thread waits --------===//
#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

// Wakes whose block is `block` and that came from another thread.
std::pair<size_t, size_t> LinkedWakes(const ParsedTrace& t, const std::string& block) {
  size_t linked = 0, all = 0;
  for (const Wake& w : Wakes(t)) {
    if (w.block->name != block) continue;
    ++all;
    if (w.unblock->g != 0 && w.unblock->g != w.block->g) ++linked;
  }
  return {linked, all};
}

TEST_CASE("TCP echo on loopback and a pipe waiter in poll: -pprof=net names the waiters",
          "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("net_echo")}, dir);
  CHECK(s.plain.out == "echoed 200, pipe said x\n");
  CHECK(s.parsed.Count("GoBlockNet") >= 10);
  // Every send and receive is there, short (GoSysCall) or blocking.
  CHECK(s.parsed.Count("GoSysCall") + s.parsed.Count("GoBlockNet") >= 800);
  PprofResult p = Pprof(s.trace, "net");
  INFO(p.error);
  REQUIRE(p.ok);
  CHECK_THAT(p.traces, Catch::Contains("pipe_waiter"));
  CHECK_THAT(p.traces, Catch::Contains("client_roundtrips"));
  CHECK_THAT(p.traces, Catch::Contains("server_loop"));
  // Network waits are woken by the netpoller, as in Go.
  for (const Wake& w : Wakes(s.parsed))
    if (w.block->name == "GoBlockNet") CHECK(w.unblock->p == 1000002);
  // Go 1.23: the netpoller's unblocks have no stack, so each wait there lasts until the
  // thread's next system call (README.md, "Compatibility"); the pages all work.
  CheckWithGo123(s.trace, "net");
}

TEST_CASE("a file written and fsync'ed: -pprof=syscall names the caller; errno unchanged",
          "[syscalls]") {
  TempDir dir;
  // Every system call blocks at threshold 0: fsync on a fast or memory-backed
  // filesystem may take less than the default 20 us.
  ScenarioRun s = RunTraced({Scenario("file_fsync"), dir.File("data")}, dir, {"GOTRACE_BLOCK_US=0"});
  CHECK(s.plain.out ==
        "write_and_sync=0 read=-1 errno=EBADF open=-1 errno=ENOENT write=-1 errno=EBADF\n");
  CHECK(s.parsed.Count("GoSysBlock") >= 64);
  PprofResult p = Pprof(s.trace, "syscall");
  INFO(p.error);
  REQUIRE(p.ok);
  CHECK_THAT(p.traces, Catch::Contains("write_and_sync"));
  CHECK_THAT(p.raw, Catch::Contains("file_fsync.c:"));
  // With the default threshold the same program gives a valid trace too.
  TempDir dir2;
  RunTraced({Scenario("file_fsync"), dir2.File("data")}, dir2, {}, /*web=*/false);
}

TEST_CASE("readers and a writer on a rwlock, started by a barrier", "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("rwlock_barrier")}, dir);
  CHECK(s.plain.out == "value 20 reads 80\n");
  auto [linked, all] = LinkedWakes(s.parsed, "GoBlockSync");
  INFO(linked << " of " << all << " sync waits woken by another thread");
  CHECK(all >= 40);
  CHECK(linked * 10 >= all * 8);  // rwlock and barrier waits end by a release
}

TEST_CASE("semaphore producer and consumer: posts wake the consumer", "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("sem_prodcons")}, dir);
  CHECK(s.plain.out == "consumed 100 timedwait -1\n");
  auto [linked, all] = LinkedWakes(s.parsed, "GoBlockSync");
  INFO(linked << " of " << all << " semaphore waits woken by the producer");
  CHECK(all >= 50);
  CHECK(linked * 10 >= all * 9);
}

TEST_CASE("C++20 atomic wait/notify, counting_semaphore, barrier and latch (futex)",
          "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("cxx20_sync")}, dir);
  CHECK(s.plain.out == "turn 0 got 50 work 40\n");
  auto [linked, all] = LinkedWakes(s.parsed, "GoBlockSync");
  INFO(linked << " of " << all << " futex waits woken by another thread");
  // ~280 on an idle machine; beside two busy loops on 2 cpus as few as 6
  // (a waiter that runs late finds the turn already changed and never waits).
  CHECK(all >= 5);
  CHECK(linked * 10 >= all * 7);
  PprofResult p = Pprof(s.trace, "sync");
  REQUIRE(p.ok);
  CHECK_THAT(p.traces, Catch::Contains("AtomicPingPong"));
}

TEST_CASE("close_range and closefrom over every descriptor cost no page faults of the tracer's",
          "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("close_range_faults")}, dir);
  CHECK(s.plain.out == "ok\n");
  CHECK(s.traced.out == "ok\n");
}

TEST_CASE("a parent blocked in waitpid", "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("waitpid_parent")}, dir);
  CHECK(s.plain.out == "child exited with 3\n");
  CHECK(s.parsed.Count("GoSysBlock") == 1);
  CHECK(s.parsed.Count("GoSysExit") == 1);
  PprofResult p = Pprof(s.trace, "syscall");
  REQUIRE(p.ok);
  CHECK_THAT(p.traces, Catch::Contains("wait_for_child"));
  CHECK(FilesEnding(dir.path(), ".trace").size() == 1);  // the child wrote nothing
}

TEST_CASE("stdio reads waiting on an empty pipe: each entry point's wait, with its caller",
          "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("stdio_pipe")}, dir);
  CHECK(s.plain.out ==
        "line0 line1 line2 line3 line4 line5 line6 line7 line8 line9 line10 line11 line12 "
        "line13 line14 line15 line16 line17\n");
  CHECK(s.traced.out == s.plain.out);
  // Eighteen refills that waited 20 ms on the pipe: network waits (a pipe's
  // class), and the child's read of each request.
  CHECK(s.parsed.Count("GoBlockNet") >= 18);
  PprofResult p = Pprof(s.trace, "net");
  INFO(p.error);
  REQUIRE(p.ok);
  for (const char* fn :
       {"read_with_fread", "read_with_fgets", "read_with_getline", "read_with_getdelim",
        "read_with_fgetc", "read_with_getc_unlocked", "read_with_fscanf", "read_with_vfscanf",
        "read_with_isoc99_fscanf", "read_with_isoc99_vfscanf", "read_with_scanf",
        "read_with_vscanf", "read_with_isoc99_scanf", "read_with_isoc99_vscanf",
        "read_with_isoc23_fscanf", "read_with_isoc23_vfscanf", "read_with_isoc23_scanf",
        "read_with_isoc23_vscanf"}) {
    INFO(fn);
    CHECK_THAT(p.traces, Catch::Contains(fn));
  }
}

TEST_CASE("wide-character stdio reads waiting on an empty pipe: each entry point's wait",
          "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("stdio_wide")}, dir);
  CHECK(s.plain.out ==
        "l\xc3\xa9gne0 l\xc3\xa9gne1 l\xc3\xa9gne2 l\xc3\xa9gne3 l\xc3\xa9gne4 l\xc3\xa9gne5 "
        "l\xc3\xa9gne6 l\xc3\xa9gne7 l\xc3\xa9gne8 l\xc3\xa9gne9 l\xc3\xa9gne10\n"
        "byte streams: WEOF WEOF\n");
  CHECK(s.traced.out == s.plain.out);
  CHECK(s.parsed.Count("GoBlockNet") >= 11);
  PprofResult p = Pprof(s.trace, "net");
  INFO(p.error);
  REQUIRE(p.ok);
  for (const char* fn : {"read_with_fgetwc", "read_with_getwc", "read_with_fgetwc_unlocked",
                         "read_with_getwc_unlocked", "read_with_fgetws",
                         "read_with_fgetws_unlocked", "read_with_fgetws_chk", "read_with_wuflow",
                         "read_with_getwchar", "read_with_getwchar_unlocked", "read_with_wcin"}) {
    INFO(fn);
    CHECK_THAT(p.traces, Catch::Contains(std::string(fn) + "\n"));  // not a longer name's start
  }
}

// fscanf("%d") over 100,000 numbers on one line: only the calls that
// refill the buffer (389 KB in 4 KiB reads) are reads for the tracer. When a
// call counted as answered only with a whole line buffered, every one of
// them was recorded (98,980 system calls in the trace). Then fscanf("%c")
// over 100,000 letters without a blank: the refills (25), and the calls in
// each buffer's last 256 bytes (6,400 at most); every call (100,000) when a
// word had to end within the buffer.
TEST_CASE("scanf answered from its buffer records nothing", "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("scanf_numbers"), dir.File("numbers.txt")}, dir);
  CHECK(s.plain.out == "read 100000 numbers, sum 49950000\nread 100000 letters\n");
  CHECK(s.traced.out == s.plain.out);
  const size_t calls = s.parsed.Count("GoSysCall");
  INFO(calls << " system calls in the trace");
  CHECK(calls >= 50);  // the refills: 388,900 bytes read 4 KiB at a time, then 100,000
  CHECK(calls < 8000);
}

// The tracer's look-ups of the functions it interposes (before the first
// fork: every one, those this libc lacks included) leave nothing for the
// program's dlerror(). One that failed left "undefined symbol:
// __isoc23_vfscanf" there, and sandboxed chromium hung at its start.
TEST_CASE("the tracer's failed look-ups leave no message for dlerror()", "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("dlerror_fork")}, dir);
  CHECK(s.plain.out == "after fork: (none)\nafter dlsym: found (none)\n");
  CHECK(s.traced.out == s.plain.out);
}

TEST_CASE("pthread_cancel of a thread blocked in read (H30)", "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("cancel_read")}, dir);
  CHECK(s.plain.out == "cancelled 1\n");
  CHECK(s.parsed.Count("GoEnd") == 1);  // the cancelled thread ended
  CHECK(s.parsed.Count("GoSleep") >= 6);  // main still recorded after the cancel
}

TEST_CASE("signal handlers call interposed functions inside one (H17)", "[syscalls]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("signal_nested")}, dir);
  CHECK(s.plain.out == "handled 5\n");
}

}  // namespace
}  // namespace gotrace::testing
