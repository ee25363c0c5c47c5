// SPDX-License-Identifier: Apache-2.0
// Scenario: fscanf("%d") over a file of 100,000 numbers on one line, as
// programs read their input, then fscanf("%c") over 100,000 characters
// without a blank. Each call is answered from the stream's buffer but the
// one that refills it: only those are reads of the file for the tracer (and,
// for the characters, the calls in each buffer's last 256 bytes). Prints
// how many numbers it read and their sum, and how many characters.
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  enum { kNumbers = 100000 };
  FILE* w = fopen(argv[1], "w");
  if (w == NULL) return 2;
  for (int i = 0; i < kNumbers; i++) fprintf(w, "%d ", i % 1000);
  fputc('\n', w);
  if (fclose(w) != 0) return 2;
  FILE* r = fopen(argv[1], "r");
  if (r == NULL) return 2;
  long sum = 0;
  int n = 0, x;
  while (fscanf(r, "%d", &x) == 1) {
    sum += x;
    n++;
  }
  fclose(r);
  printf("read %d numbers, sum %ld\n", n, sum);
  w = fopen(argv[1], "w");
  if (w == NULL) return 2;
  for (int i = 0; i < kNumbers; i++) fputc('a' + i % 26, w);
  if (fclose(w) != 0) return 2;
  r = fopen(argv[1], "r");
  if (r == NULL) return 2;
  char c;
  n = 0;
  while (fscanf(r, "%c", &c) == 1) n += c >= 'a' && c <= 'z';
  fclose(r);
  printf("read %d letters\n", n);
  return 0;
}
