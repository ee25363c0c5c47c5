// SPDX-License-Identifier: Apache-2.0
// Scenario: stdio reads that wait on an empty pipe. The parent reads lines
// through one stdio entry point after another, each from a function of its
// own: fread, fgets, getline, getdelim, fgetc, and the getc_unlocked macro
// (its refill: __uflow). Before each it asks the child for the next line,
// which comes 20 ms later: every read finds the stream's buffer empty and
// waits inside libc (its internal read, which no interposer sees). Prints
// the lines it read.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kLines = 6 };

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
  if (f == NULL) return 2;
  void (*readers[kLines])(FILE*, char*) = {read_with_fread,   read_with_fgets,
                                           read_with_getline, read_with_getdelim,
                                           read_with_fgetc,   read_with_getc_unlocked};
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
