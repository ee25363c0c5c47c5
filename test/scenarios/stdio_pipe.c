// SPDX-License-Identifier: Apache-2.0
// Scenario: stdio reads that wait on an empty pipe. The parent reads lines
// through one stdio entry point after another, each from a function of its
// own: fread, fgets, getline, getdelim, fgetc, the getc_unlocked macro (its
// refill: __uflow), then the scanf family: fscanf and vfscanf (glibc's GNU
// entry points, called by their symbols) and __isoc99_fscanf and
// __isoc99_vfscanf on the pipe's stream, scanf, vscanf, __isoc99_scanf and
// __isoc99_vscanf on stdin (the same pipe), and glibc 2.38's C23 ones
// (__isoc23_*: from libstdio_c23.so, stdio_c23.c, where glibc lacks them).
// Before each it asks the child for the next line, which comes 20 ms later:
// every read finds the stream's buffer empty (or holding only the newline
// the previous scanf left) and waits inside libc (its internal read, which
// no interposer sees). Prints the lines it read.
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kLines = 18 };

// The scanf entry points by their symbols: <stdio.h> names either the GNU
// ones or the ISO C99 ones fscanf, depending on the language version.
int gnu_fscanf(FILE* f, const char* format, ...) __asm__("fscanf");
int gnu_vfscanf(FILE* f, const char* format, va_list ap) __asm__("vfscanf");
int gnu_scanf(const char* format, ...) __asm__("scanf");
int gnu_vscanf(const char* format, va_list ap) __asm__("vscanf");
int iso_fscanf(FILE* f, const char* format, ...) __asm__("__isoc99_fscanf");
int iso_vfscanf(FILE* f, const char* format, va_list ap) __asm__("__isoc99_vfscanf");
int iso_scanf(const char* format, ...) __asm__("__isoc99_scanf");
int iso_vscanf(const char* format, va_list ap) __asm__("__isoc99_vscanf");
int c23_fscanf(FILE* f, const char* format, ...) __asm__("__isoc23_fscanf");
int c23_vfscanf(FILE* f, const char* format, va_list ap) __asm__("__isoc23_vfscanf");
int c23_scanf(const char* format, ...) __asm__("__isoc23_scanf");
int c23_vscanf(const char* format, va_list ap) __asm__("__isoc23_vscanf");

__attribute__((noinline)) static void read_with_fread(FILE* f, char* out) {
  const size_t n = fread(out, 1, 5, f);  // "lineN" without its newline...
  out[n] = '\0';
  (void)fgetc(f);  // ... which is buffered now: no wait
}
__attribute__((noinline)) static void read_with_fgets(FILE* f, char* out) {
  if (fgets(out, 64, f) == NULL) out[0] = '\0';
  out[strcspn(out, "\n")] = '\0';
}
__attribute__((noinline)) static void read_with_getline(FILE* f, char* out) {
  char* line = NULL;
  size_t cap = 0;
  const ssize_t n = getline(&line, &cap, f);
  snprintf(out, 64, "%.*s", n > 0 ? (int)n - 1 : 0, n > 0 ? line : "");
  free(line);
}
__attribute__((noinline)) static void read_with_getdelim(FILE* f, char* out) {
  char* line = NULL;
  size_t cap = 0;
  const ssize_t n = getdelim(&line, &cap, '\n', f);
  snprintf(out, 64, "%.*s", n > 0 ? (int)n - 1 : 0, n > 0 ? line : "");
  free(line);
}
__attribute__((noinline)) static void read_with_fgetc(FILE* f, char* out) {
  int c, i = 0;
  while ((c = fgetc(f)) != EOF && c != '\n' && i < 63) out[i++] = (char)c;
  out[i] = '\0';
}
__attribute__((noinline)) static void read_with_getc_unlocked(FILE* f, char* out) {
  int c, i = 0;
  while ((c = getc_unlocked(f)) != EOF && c != '\n' && i < 63) out[i++] = (char)c;
  out[i] = '\0';
}

__attribute__((noinline)) static void read_with_fscanf(FILE* f, char* out) {
  if (gnu_fscanf(f, "%63s", out) != 1) out[0] = '\0';
}
__attribute__((noinline)) static void read_with_isoc99_fscanf(FILE* f, char* out) {
  if (iso_fscanf(f, "%63s", out) != 1) out[0] = '\0';
}
// iso: 0 GNU's, 1 ISO C99's, 2 C23's.
static int call_vfscanf(int iso, FILE* f, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = iso == 2   ? c23_vfscanf(f, format, ap)
                : iso == 1 ? iso_vfscanf(f, format, ap)
                           : gnu_vfscanf(f, format, ap);
  va_end(ap);
  return r;
}
__attribute__((noinline)) static void read_with_vfscanf(FILE* f, char* out) {
  if (call_vfscanf(0, f, "%63s", out) != 1) out[0] = '\0';
}
__attribute__((noinline)) static void read_with_isoc99_vfscanf(FILE* f, char* out) {
  if (call_vfscanf(1, f, "%63s", out) != 1) out[0] = '\0';
}
// On stdin (the pipe's read end, dup2'd there).
__attribute__((noinline)) static void read_with_scanf(FILE* f, char* out) {
  (void)f;
  if (gnu_scanf("%63s", out) != 1) out[0] = '\0';
}
__attribute__((noinline)) static void read_with_isoc99_scanf(FILE* f, char* out) {
  (void)f;
  if (iso_scanf("%63s", out) != 1) out[0] = '\0';
}
static int call_vscanf(int iso, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = iso == 2   ? c23_vscanf(format, ap)
                : iso == 1 ? iso_vscanf(format, ap)
                           : gnu_vscanf(format, ap);
  va_end(ap);
  return r;
}
__attribute__((noinline)) static void read_with_vscanf(FILE* f, char* out) {
  (void)f;
  if (call_vscanf(0, "%63s", out) != 1) out[0] = '\0';
}
__attribute__((noinline)) static void read_with_isoc99_vscanf(FILE* f, char* out) {
  (void)f;
  if (call_vscanf(1, "%63s", out) != 1) out[0] = '\0';
}
__attribute__((noinline)) static void read_with_isoc23_fscanf(FILE* f, char* out) {
  if (c23_fscanf(f, "%63s", out) != 1) out[0] = '\0';
}
__attribute__((noinline)) static void read_with_isoc23_vfscanf(FILE* f, char* out) {
  if (call_vfscanf(2, f, "%63s", out) != 1) out[0] = '\0';
}
__attribute__((noinline)) static void read_with_isoc23_scanf(FILE* f, char* out) {
  (void)f;
  if (c23_scanf("%63s", out) != 1) out[0] = '\0';
}
__attribute__((noinline)) static void read_with_isoc23_vscanf(FILE* f, char* out) {
  (void)f;
  if (call_vscanf(2, "%63s", out) != 1) out[0] = '\0';
}

int main(void) {
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
      char line[16];
      const int n = snprintf(line, sizeof line, "line%d\n", i);
      if (write(p[1], line, (size_t)n) != n) _exit(3);
    }
    _exit(0);
  }
  close(p[1]);
  close(ask[0]);
  FILE* f = fdopen(p[0], "r");
  if (f == NULL || dup2(p[0], 0) != 0) return 2;
  void (*readers[kLines])(FILE*, char*) = {
      read_with_fread,          read_with_fgets,         read_with_getline,
      read_with_getdelim,       read_with_fgetc,         read_with_getc_unlocked,
      read_with_fscanf,         read_with_vfscanf,       read_with_isoc99_fscanf,
      read_with_isoc99_vfscanf, read_with_scanf,         read_with_vscanf,
      read_with_isoc99_scanf,   read_with_isoc99_vscanf, read_with_isoc23_fscanf,
      read_with_isoc23_vfscanf, read_with_isoc23_scanf,  read_with_isoc23_vscanf};
  for (int i = 0; i < kLines; i++) {
    char got[64];
    if (write(ask[1], "?", 1) != 1) return 2;
    readers[i](f, got);
    printf("%s%s", i ? " " : "", got);
  }
  printf("\n");
  int st = 0;
  waitpid(w, &st, 0);
  fclose(f);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
