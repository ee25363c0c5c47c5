// SPDX-License-Identifier: Apache-2.0
// spawn_cost: what a preloaded library adds to every process it is loaded
// into (issue 18 item 5: the per-process floor). Runs one command many times
// under several environments, interleaved round by round, and reports each
// variant's CPU time (user + system, from wait4: the kernel's exact
// per-task runtime), page faults and wall time, and the difference from the
// first variant with a 95% interval over the rounds.
//
//   spawn_cost [-n RUNS] [-w WARMUP] [-v 'NAME VAR=VALUE ...']... -- PROG [ARGS]
//
// Each -v adds a variant: a name, then assignments added to (or, with an
// empty value "VAR=", removed from) this program's environment. Without -v:
// one variant, "plain", with the environment as it is. Example:
//
//   spawn_cost -n 2000 -v plain
//              -v 'loaded LD_PRELOAD=build/libgotrace.so GOTRACE_DISABLE=1'
//              -v 'traced LD_PRELOAD=build/libgotrace.so' -- /bin/true
//
// Children are started with posix_spawn (vfork semantics: the parent's
// page tables are not copied), their output goes to /dev/null, and a child
// that fails (a non-zero status) stops the measurement: its numbers would
// measure something else.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

enum { kMaxVariants = 8, kMaxVars = 16 };

struct Variant {
  char* name;
  char** envp;
  double* cpu_us;  // per run
  double* minflt;
  double* wall_us;
};

static double NowUs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

// environ with the variant's assignments applied.
static char** MakeEnv(char* spec, char** name) {
  char* vars[kMaxVars];
  size_t nvars = 0;
  char* save = NULL;
  *name = strtok_r(spec, " ", &save);
  for (char* tok = strtok_r(NULL, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
    if (strchr(tok, '=') == NULL || nvars == kMaxVars) {
      fprintf(stderr, "spawn_cost: bad assignment '%s' (VAR=VALUE, at most %d)\n", tok, kMaxVars);
      exit(2);
    }
    vars[nvars++] = tok;
  }
  size_t n = 0;
  while (environ[n] != NULL) ++n;
  char** env = calloc(n + nvars + 1, sizeof *env);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    int replaced = 0;
    for (size_t j = 0; j < nvars; ++j) {
      const size_t len = (size_t)(strchr(vars[j], '=') - vars[j]) + 1;
      if (strncmp(environ[i], vars[j], len) == 0) replaced = 1;
    }
    if (!replaced) env[k++] = environ[i];
  }
  for (size_t j = 0; j < nvars; ++j) {
    if (strchr(vars[j], '=')[1] != '\0') env[k++] = vars[j];
  }
  env[k] = NULL;
  return env;
}

static int RunOnce(struct Variant* v, char** argv, size_t slot) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  const double t0 = NowUs();
  pid_t pid;
  const int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, v->envp);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    fprintf(stderr, "spawn_cost: cannot run %s: %s\n", argv[0], strerror(rc));
    return -1;
  }
  int status;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) return -1;
  }
  const double t1 = NowUs();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "spawn_cost: %s failed under variant %s (status 0x%x)\n", argv[0], v->name, status);
    return -1;
  }
  if (slot != (size_t)-1) {
    v->cpu_us[slot] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
                      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    v->minflt[slot] = (double)ru.ru_minflt;
    v->wall_us[slot] = t1 - t0;
  }
  return 0;
}

static int CmpDouble(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double Median(const double* v, size_t n) {
  double* c = malloc(n * sizeof *c);
  memcpy(c, v, n * sizeof *c);
  qsort(c, n, sizeof *c, CmpDouble);
  const double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  free(c);
  return m;
}

static void MeanCi(const double* a, const double* b, size_t n, double* mean, double* ci) {
  // Paired differences a[i] - b[i] (b may be NULL): mean and 95% half-width.
  double s = 0, s2 = 0;
  for (size_t i = 0; i < n; ++i) s += a[i] - (b ? b[i] : 0);
  *mean = s / (double)n;
  for (size_t i = 0; i < n; ++i) {
    const double d = a[i] - (b ? b[i] : 0) - *mean;
    s2 += d * d;
  }
  *ci = n > 1 ? 1.96 * sqrt(s2 / (double)(n - 1) / (double)n) : 0;
}

int main(int argc, char** argv) {
  size_t runs = 1000, warmup = 20;
  struct Variant vars[kMaxVariants];
  size_t nv = 0;
  int opt;
  while ((opt = getopt(argc, argv, "+n:w:v:h")) != -1) {
    switch (opt) {
      case 'n': runs = strtoul(optarg, NULL, 10); break;
      case 'w': warmup = strtoul(optarg, NULL, 10); break;
      case 'v':
        if (nv == kMaxVariants) {
          fprintf(stderr, "spawn_cost: at most %d variants\n", kMaxVariants);
          return 2;
        }
        vars[nv].envp = MakeEnv(strdup(optarg), &vars[nv].name);
        if (vars[nv].name == NULL) {
          fprintf(stderr, "spawn_cost: -v needs a name\n");
          return 2;
        }
        ++nv;
        break;
      default:
        fprintf(stderr, "usage: spawn_cost [-n RUNS] [-w WARMUP] [-v 'NAME VAR=VALUE ...']... -- PROG [ARGS]\n");
        return opt == 'h' ? 0 : 2;
    }
  }
  if (optind >= argc || runs < 2) {
    fprintf(stderr, "usage: spawn_cost [-n RUNS] [-w WARMUP] [-v 'NAME VAR=VALUE ...']... -- PROG [ARGS]\n");
    return 2;
  }
  if (nv == 0) {
    char plain[] = "plain";
    vars[nv].envp = MakeEnv(strdup(plain), &vars[nv].name);
    ++nv;
  }
  char** prog = argv + optind;
  for (size_t i = 0; i < nv; ++i) {
    vars[i].cpu_us = calloc(runs, sizeof(double));
    vars[i].minflt = calloc(runs, sizeof(double));
    vars[i].wall_us = calloc(runs, sizeof(double));
  }
  for (size_t r = 0; r < warmup; ++r) {
    for (size_t i = 0; i < nv; ++i) {
      if (RunOnce(&vars[i], prog, (size_t)-1) != 0) return 1;
    }
  }
  // Interleaved, the order rotating every round: drift in the machine's
  // speed falls on every variant alike.
  for (size_t r = 0; r < runs; ++r) {
    for (size_t k = 0; k < nv; ++k) {
      const size_t i = (k + r) % nv;
      if (RunOnce(&vars[i], prog, r) != 0) return 1;
    }
  }
  printf("%s: %zu runs per variant, interleaved\n", prog[0], runs);
  printf("%-12s %10s %10s %10s %10s %18s %14s\n", "variant", "cpu us", "cpu med", "faults", "wall us",
         "cpu added (95%)", "faults added");
  for (size_t i = 0; i < nv; ++i) {
    double cpu, cpu_ci, flt, flt_ci, wall, wall_ci;
    MeanCi(vars[i].cpu_us, NULL, runs, &cpu, &cpu_ci);
    MeanCi(vars[i].minflt, NULL, runs, &flt, &flt_ci);
    MeanCi(vars[i].wall_us, NULL, runs, &wall, &wall_ci);
    printf("%-12s %10.1f %10.1f %10.1f %10.1f", vars[i].name, cpu, Median(vars[i].cpu_us, runs), flt, wall);
    if (i > 0) {
      double d, dci, f, fci;
      MeanCi(vars[i].cpu_us, vars[0].cpu_us, runs, &d, &dci);
      MeanCi(vars[i].minflt, vars[0].minflt, runs, &f, &fci);
      printf(" %9.1f ±%6.1f %8.1f", d, dci, f);
    }
    printf("\n");
  }
  return 0;
}
