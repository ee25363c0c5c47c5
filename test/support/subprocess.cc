// SPDX-License-Identifier: Apache-2.0
//===-- test/support/subprocess.cc - run a program, capture its output ----===//
#include "test/support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

extern char** environ;

namespace gotrace::testing {
namespace {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

std::string ProcResult::Describe() const {
  if (spawn_failed) return "spawn failed";
  if (timed_out) return "timed out";
  if (term_signal != 0) return "signal " + std::to_string(term_signal);
  return "exit " + std::to_string(exit_code);
}

ProcResult RunProcess(const std::vector<std::string>& argv, const ProcOptions& opts) {
  ProcResult r;
  if (argv.empty()) {
    r.spawn_failed = true;
    return r;
  }
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& u : opts.unset_env) env.erase(u);
  for (const auto& kv : opts.env) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::vector<std::string> env_strs;
  for (const auto& [k, v] : env) env_strs.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  int out_pipe[2], err_pipe[2], in_pipe[2], exec_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) || pipe2(in_pipe, O_CLOEXEC) ||
      pipe2(exec_pipe, O_CLOEXEC)) {
    r.spawn_failed = true;
    return r;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    r.spawn_failed = true;
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (!opts.cwd.empty() && chdir(opts.cwd.c_str()) != 0) _exit(127);
    signal(SIGPIPE, SIG_DFL);
    execve(args[0], args.data(), envp.data());
    // execve with a bare name: search PATH.
    if (std::strchr(args[0], '/') == nullptr) execvpe(args[0], args.data(), envp.data());
    const int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);
    _exit(127);
  }
  setpgid(pid, pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(in_pipe[0]);
  close(exec_pipe[1]);
  int exec_errno = 0;
  if (read(exec_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) r.spawn_failed = true;
  close(exec_pipe[0]);

  // Feed stdin (small inputs only), then close it.
  size_t in_off = 0;
  int in_fd = in_pipe[1];
  fcntl(in_fd, F_SETFL, O_NONBLOCK);
  if (opts.stdin_data.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  const double deadline = Now() + opts.timeout_s;
  int open_fds = 2;
  bool out_open = true, err_open = true;
  char buf[65536];
  while (open_fds > 0) {
    pollfd fds[3];
    int n = 0;
    if (out_open) fds[n++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[n++] = {err_pipe[0], POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    const double left = deadline - Now();
    if (left <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    const int pr = poll(fds, static_cast<nfds_t>(n), static_cast<int>(left * 1000) + 1);
    if (pr < 0 && errno == EINTR) continue;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        ssize_t w = write(in_fd, opts.stdin_data.data() + in_off, opts.stdin_data.size() - in_off);
        if (w > 0) in_off += static_cast<size_t>(w);
        if (w < 0 || in_off == opts.stdin_data.size()) {
          close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (fds[i].fd == out_pipe[0] ? r.out : r.err).append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        if (fds[i].fd == out_pipe[0]) out_open = false;
        else err_open = false;
        --open_fds;
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  for (;;) {
    const double left = deadline - Now();
    const pid_t w = waitpid(pid, &status, left > 0 ? WNOHANG : 0);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (left <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      continue;
    }
    usleep(1000);
  }
  // Reap stragglers of the group (a daemonized grandchild keeps pipes open).
  kill(-pid, SIGKILL);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  if (r.spawn_failed) r.err = std::string("cannot execute ") + argv[0] + ": " + std::strerror(exec_errno);
  return r;
}

}  // namespace gotrace::testing
