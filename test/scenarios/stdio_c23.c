// SPDX-License-Identifier: Apache-2.0
// A stand-in for glibc 2.38's C23 scanf entry points (__isoc23_scanf,
// __isoc23_fscanf and their va_list forms: what <stdio.h> calls scanf and
// fscanf in C++ and C23 from glibc 2.38 on), which this machine's glibc may
// lack. Each does what glibc's does for the scenario's formats, through
// glibc's ISO C99 one, reached as glibc reaches its own (not through
// libgotrace.so's hook of it: dlsym(RTLD_NEXT), the definition after this
// library's, skips the preloaded one). stdio_pipe links it, so that
// libgotrace.so's hooks of these names run: they find it as the next
// definition (RTLD_NEXT), as they would glibc's. No <stdio.h>: from glibc
// 2.38 on it renames fscanf to __isoc23_fscanf, which this file defines.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>

typedef struct _IO_FILE FILE;
typedef int (*Vfscanf)(FILE*, const char*, va_list);
typedef int (*Vscanf)(const char*, va_list);

static Vfscanf Iso99Vfscanf(void) { return (Vfscanf)dlsym(RTLD_NEXT, "__isoc99_vfscanf"); }
static Vscanf Iso99Vscanf(void) { return (Vscanf)dlsym(RTLD_NEXT, "__isoc99_vscanf"); }

int __isoc23_vfscanf(FILE* f, const char* format, va_list ap) {
  return Iso99Vfscanf()(f, format, ap);
}
int __isoc23_vscanf(const char* format, va_list ap) { return Iso99Vscanf()(format, ap); }
int __isoc23_fscanf(FILE* f, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = Iso99Vfscanf()(f, format, ap);
  va_end(ap);
  return r;
}
int __isoc23_scanf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = Iso99Vscanf()(format, ap);
  va_end(ap);
  return r;
}
