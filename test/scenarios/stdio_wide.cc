// SPDX-License-Identifier: Apache-2.0
// Scenario: wide-character stdio reads that wait on an empty pipe, as
// stdio_pipe.c does for the narrow ones. The parent reads lines through one
// entry point after another, each from a function of its own: fgetwc,
// getwc, fgetwc_unlocked, getwc_unlocked, fgetws, fgetws_unlocked,
// __fgetws_chk and __wuflow (called by their symbols) on a wide stream of
// the pipe; getwchar, getwchar_unlocked and std::wcin (libstdc++'s
// stdio-synced stream: getwc) on stdin, the same pipe. Before each it asks
// the child for the next line, which comes 20 ms later (with a two-byte
// character: the bytes convert in the C.UTF-8 locale), so every read finds
// both of its stream's buffers empty and waits inside libc. Prints the
// lines it read, then how a wide read of two byte-oriented streams ends.
#include <sys/wait.h>
#include <unistd.h>

#include <clocale>
#include <cstdio>
#include <cwchar>
#include <iostream>
#include <string>

extern "C" {
wchar_t* gt_fgetws_chk(wchar_t* ws, size_t room, int n, FILE* fp) __asm__("__fgetws_chk");
wint_t gt_wuflow(FILE* fp) __asm__("__wuflow");
}

namespace {

constexpr int kLines = 11;
constexpr int kRoom = 64;

// The rest of a line, a wide character at a time, after its first `c`.
void Rest(wint_t c, FILE* f, wint_t (*next)(FILE*), wchar_t* out) {
  int i = 0;
  for (; c != WEOF && c != L'\n' && i < kRoom - 1; c = next(f)) out[i++] = static_cast<wchar_t>(c);
  out[i] = L'\0';
}
void Chomp(wchar_t* s) {
  if (wchar_t* nl = std::wcschr(s, L'\n')) *nl = L'\0';
}

__attribute__((noinline)) void read_with_fgetwc(FILE* f, wchar_t* out) {
  Rest(fgetwc(f), f, fgetwc, out);
}
__attribute__((noinline)) void read_with_getwc(FILE* f, wchar_t* out) {
  Rest(
      getwc(f), f, [](FILE* s) { return getwc(s); }, out);
}
__attribute__((noinline)) void read_with_fgetwc_unlocked(FILE* f, wchar_t* out) {
  Rest(fgetwc_unlocked(f), f, fgetwc_unlocked, out);
}
__attribute__((noinline)) void read_with_getwc_unlocked(FILE* f, wchar_t* out) {
  Rest(
      getwc_unlocked(f), f, [](FILE* s) { return getwc_unlocked(s); }, out);
}
__attribute__((noinline)) void read_with_fgetws(FILE* f, wchar_t* out) {
  if (fgetws(out, kRoom, f) == nullptr) out[0] = L'\0';
  Chomp(out);
}
__attribute__((noinline)) void read_with_fgetws_unlocked(FILE* f, wchar_t* out) {
  if (fgetws_unlocked(out, kRoom, f) == nullptr) out[0] = L'\0';
  Chomp(out);
}
__attribute__((noinline)) void read_with_fgetws_chk(FILE* f, wchar_t* out) {
  if (gt_fgetws_chk(out, kRoom, kRoom, f) == nullptr) out[0] = L'\0';
  Chomp(out);
}
__attribute__((noinline)) void read_with_wuflow(FILE* f, wchar_t* out) {
  Rest(gt_wuflow(f), f, fgetwc, out);
}
// On stdin (the pipe's read end, dup2'd there).
__attribute__((noinline)) void read_with_getwchar(FILE*, wchar_t* out) {
  Rest(
      getwchar(), stdin, [](FILE*) { return getwchar(); }, out);
}
__attribute__((noinline)) void read_with_getwchar_unlocked(FILE*, wchar_t* out) {
  Rest(
      getwchar_unlocked(), stdin, [](FILE*) { return getwchar_unlocked(); }, out);
}
__attribute__((noinline)) void read_with_wcin(FILE*, wchar_t* out) {
  std::wstring line;
  std::getline(std::wcin, line);
  std::swprintf(out, kRoom, L"%ls", line.c_str());
}

}  // namespace

int main() {
  if (std::setlocale(LC_ALL, "C.UTF-8") == nullptr) return 2;
  int p[2], ask[2];
  if (pipe(p) != 0 || pipe(ask) != 0) return 2;
  const pid_t w = fork();
  if (w < 0) return 2;
  if (w == 0) {
    close(p[0]);
    close(ask[1]);
    for (int i = 0; i < kLines; i++) {
      char c;
      if (read(ask[0], &c, 1) != 1) _exit(3);
      usleep(20000);
      char line[32];
      const int n = std::snprintf(line, sizeof line, "l\xc3\xa9gne%d\n", i);  // "légneN"
      if (write(p[1], line, static_cast<size_t>(n)) != n) _exit(3);
    }
    _exit(0);
  }
  close(p[1]);
  close(ask[0]);
  FILE* f = fdopen(p[0], "r");
  if (f == nullptr || dup2(p[0], 0) != 0 || fwide(f, 1) <= 0) return 2;
  void (*readers[kLines])(FILE*, wchar_t*) = {read_with_fgetwc,
                                              read_with_getwc,
                                              read_with_fgetwc_unlocked,
                                              read_with_getwc_unlocked,
                                              read_with_fgetws,
                                              read_with_fgetws_unlocked,
                                              read_with_fgetws_chk,
                                              read_with_wuflow,
                                              read_with_getwchar,
                                              read_with_getwchar_unlocked,
                                              read_with_wcin};
  for (int i = 0; i < kLines; i++) {
    wchar_t got[kRoom];
    if (write(ask[1], "?", 1) != 1) return 2;
    readers[i](f, got);
    std::printf("%s%ls", i ? " " : "", got);
  }
  std::printf("\n");
  // A byte-only stream (glibc's fmemopen: a poison value for its wide data)
  // and a narrow-oriented one: a wide read fails without reading.
  char bytes[] = "abc\n";
  FILE* m = fmemopen(bytes, 4, "r");
  FILE* narrow = fdopen(dup(0), "r");
  if (m == nullptr || narrow == nullptr || fwide(narrow, -1) >= 0) return 2;
  std::printf("byte streams: %s %s\n", gt_wuflow(m) == WEOF ? "WEOF" : "char",
              fgetwc(narrow) == WEOF ? "WEOF" : "char");
  fclose(m);
  fclose(narrow);
  int st = 0;
  waitpid(w, &st, 0);
  fclose(f);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
