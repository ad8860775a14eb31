/* `capguard prime learn` and `capguard prime check`: the priming workflow in
 * two commands. learn runs CMD once in guard mode, where the driver allows
 * loads during capture, so that every load is recorded with how many times
 * one process needed it; check runs CMD with the file the way a driver before
 * 12.3 would use it and passes only when no load reached the driver during
 * capture. Both run CMD through `capguard run` (this same executable), so
 * the shim is found, preloaded and summarised exactly as there, and then read
 * the run's log. */
#include "cmd_prime_learn.h"
#include "capguard/char_class.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capguard/prime_file.h"
#include "capguard/path_dir.h"
#include "cli.h"
#include "findings.h"
#include "kernel_display.h"
#include "path_check.h"
#include "preflight.h"
#include "cmd_prime_oci.h"
#include "prime_precheck.h"
#include "report.h"
#include "run_end.h"
#include "offender.h"
#include "rerun_command.h"
#include "plural.h"
#include "xalloc.h"

/* Drivers before CUDA 12.3 refuse module loads during capture. */
#define EMULATED_OLD_DRIVER "12020"

typedef struct {
  const char *prime, *log, *label;
  char **cmd;
} learn_opts;

static const char LEARN_NAME[] = "capguard prime learn";
static const char CHECK_NAME[] = "capguard prime check";
static const char LEARN_HELP[] =
    "Run CMD once under capguard in guard mode, so that every module or library load made\n"
    "during capture is recorded in the priming file with the most times one process\n"
    "needed it. Run it where the driver allows loads during capture (12.3 or newer) on\n"
    "the GPU architecture you deploy to; on an older driver each run learns only up to\n"
    "the first capture that breaks, and learn says so. Then check the file with\n"
    "capguard prime check, and deploy it (capguard prime merge for fleets).\n"
    "  --prime FILE   the priming file (default: $CAPGUARD_PRIME, else ~/.cache/capguard/prime.cgp)\n"
    "  --log FILE     the run's log (default: a new temporary file)\n"
    "  --label TEXT   what the file is for, kept in its identity (model=llama-8b,tp=2)\n"
    "The file's identity (capguard prime info) then says the program, the driver and GPU\n"
    "it was learned on and the label.\n"
    "Exit status: 0 learned; 1 incomplete (a driver that refuses loads during capture);\n"
    "CMD's status if it failed; 2 usage error.";
static const char CHECK_HELP[] =
    "Run CMD under capguard with the priming file as a driver before 12.3 would need it:\n"
    "module loads during capture are refused (emulated) unless the file serves them. The\n"
    "file is read, never written.\n"
    "  --prime FILE   the priming file (default as for learn)\n"
    "  --log FILE     the run's log (default: a new temporary file)\n"
    "Exit status: 0 when no load reached the driver during capture and CMD succeeded; 1\n"
    "when loads are missing from the file (each is named); CMD's status if it failed\n"
    "otherwise; 2 usage error.";

/* A label is one line of printable text (it is printed, and a dashboard
 * shows it): true when s is not. */
static bool label_bad(const char *s) {
  size_t n = strlen(s);
  if (!n || n >= CG_PRIME_LABEL_MAX)
    return true;
  for (; *s; s++)
    if (cg_is_control((unsigned char)*s))
      return true;
  return false;
}

static int parse(const char *me, const char *usage, int argc, char **argv, learn_opts *o) {
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      printf("usage: %s\n\n%s\n", usage, me == LEARN_NAME ? LEARN_HELP : CHECK_HELP);
      return -1;
    }
    if (!strcmp(a, "--label") && me == LEARN_NAME) {
      if (i + 1 >= argc || label_bad(argv[i + 1]))
        return cg_usage_error(me, usage, "--label wants printable text of 1 to %d bytes, no newline",
                              CG_PRIME_LABEL_MAX - 1);
      o->label = argv[++i];
      continue;
    }
    if ((!strcmp(a, "--prime") || !strcmp(a, "--log")) && i + 1 < argc) {
      *(a[2] == 'p' ? &o->prime : &o->log) = argv[++i];
      if (!*argv[i])
        return cg_usage_error(me, usage, "%s needs a file name", a);
    } else if (!strcmp(a, "--prime") || !strcmp(a, "--log")) {
      return cg_usage_error(me, usage, "%s needs a value", a);
    } else if (a[0] == '-') {
      return cg_usage_error(me, usage, "unknown option '%s'", a);
    } else {
      break;
    }
  }
  if (i >= argc)
    return cg_usage_error(me, usage, "missing command after --");
  o->cmd = argv + i;
  return 0;
}


static volatile sig_atomic_t child;
static void forward(int sig) {
  if (child > 0)
    kill((pid_t)child, sig);
}

/* capguard run [extra...] --prime P --log L -- CMD; returns its exit status. */
static int run_under_capguard(const char *me, const learn_opts *o, const char *log, const char *const *extra,
                              size_t n_extra) {
  size_t n_cmd = 0;
  while (o->cmd[n_cmd])
    n_cmd++;
  char **argv = calloc(n_extra + n_cmd + 8, sizeof *argv);
  if (!argv) {
    cg_error(me, "out of memory");
    return CG_EXIT_RUN_FAILED;
  }
  size_t k = 0;
  argv[k++] = "capguard";
  argv[k++] = "run";
  for (size_t i = 0; i < n_extra; i++)
    argv[k++] = (char *)extra[i];
  argv[k++] = "--prime";
  argv[k++] = (char *)o->prime;
  argv[k++] = "--log";
  argv[k++] = (char *)log;
  argv[k++] = "--";
  memcpy(argv + k, o->cmd, n_cmd * sizeof *argv);
  static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
  struct sigaction sa = {.sa_handler = forward, .sa_flags = SA_RESTART}, old[6];
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < 6; i++)
    sigaction(sigs[i], &sa, &old[i]);
  pid_t pid = fork();
  if (pid == 0) {
    for (size_t i = 0; i < 6; i++)
      sigaction(sigs[i], &old[i], NULL);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "%s: cannot run capguard itself (/proc/self/exe): %s\n", me, strerror(errno));
    _exit(CG_EXIT_RUN_FAILED);
  }
  free(argv);
  int status = CG_EXIT_RUN_FAILED;
  if (pid < 0) {
    cg_error(me, "cannot start capguard run: %s", strerror(errno));
  } else {
    child = pid;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    child = 0;
    status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  for (size_t i = 0; i < 6; i++)
    sigaction(sigs[i], &old[i], NULL);
  return status;
}

/* ---- what the file said before and after ---- */

typedef struct {
  cg_hash128 hash;
  uint64_t size;
  uint32_t modules, libraries;
} loads_seen;

/* The records of path as (hash, loads); an empty list for a missing file. */
static loads_seen *snapshot(const char *path, size_t *n) {
  cg_prime_set *s = NULL;
  *n = 0;
  if (cg_prime_load(path, &s, NULL, NULL) != 0)
    return NULL;
  loads_seen *out = calloc(cg_prime_count(s) + 1, sizeof *out);
  for (size_t i = 0; out && i < cg_prime_count(s); i++) {
    const cg_prime_record *r = cg_prime_get(s, i);
    out[(*n)++] = (loads_seen){r->hash, r->size, r->module_loads, r->library_loads};
  }
  cg_prime_free(s);
  return out;
}

static const loads_seen *find_seen(const loads_seen *list, size_t n, const cg_prime_record *r) {
  for (size_t i = 0; i < n; i++)
    if (list[i].size == r->size && list[i].hash.hi == r->hash.hi && list[i].hash.lo == r->hash.lo)
      return &list[i];
  return NULL;
}

static void print_loads(const cg_prime_record *r) {
  if (r->module_loads)
    fprintf(stderr, "%u module%s", r->module_loads, cg_plural(r->module_loads));
  if (r->module_loads && r->library_loads)
    fputs(" + ", stderr);
  if (r->library_loads)
    fprintf(stderr, "%u librar%s", r->library_loads, r->library_loads == 1 ? "y" : "ies");
}

static void print_record(const cg_prime_record *r, const char *what) {
  char hex[33];
  cg_hash_format(r->hash, hex);
  fprintf(stderr, "  %.12s  %-6s  sm_%-3u  %8llu bytes  ", hex, cg_image_kind_name(r->kind), r->sm_arch,
         (unsigned long long)r->size);
  print_loads(r);
  fputs("  ", stderr);
  char disp[CG_KERNEL_DISPLAY_MAX];
  const char *k = r->kernel_names;
  for (uint32_t i = 0; i < r->n_kernels && k < r->kernel_names + r->names_len; i++, k += strlen(k) + 1)
    fprintf(stderr, "%s%s", i ? ", " : "", cg_kernel_display(k, disp, sizeof disp));
  fprintf(stderr, "%s(%s)\n", r->n_kernels ? "  " : "-  ", what);
}

/* Prints what path gained over before; returns how many images changed and
 * the arch they were built for (0 when none or PTX only). */
static size_t print_learned(const char *path, const loads_seen *before, size_t n_before, unsigned *arch) {
  cg_prime_set *s = NULL;
  *arch = 0;
  if (cg_prime_load(path, &s, NULL, NULL) != 0)
    return 0;
  size_t changed = 0;
  for (size_t i = 0; i < cg_prime_count(s); i++) {
    const cg_prime_record *r = cg_prime_get(s, i);
    const loads_seen *b = find_seen(before, n_before, r);
    if (b && b->modules >= r->module_loads && b->libraries >= r->library_loads)
      continue;
    print_record(r, b ? "needed more loads" : "new");
    if (r->kind != CG_IMAGE_PTX && r->sm_arch)
      *arch = r->sm_arch;
    changed++;
  }
  fprintf(stderr, "  the file holds %zu image%s\n", cg_prime_count(s), cg_plural(cg_prime_count(s)));
  cg_prime_free(s);
  return changed;
}

/* ---- reading the run's log ---- */

/* The run's log, read as run reads it (cmd/run_end.h), and its report
 * (meaning/report.h): the loads during capture are its load facts. */
static int read_report(const char *me, const char *path, cgl_log *log, cgr_report *r) {
  cgl_init(log);
  const cg_run_log_file file = {path, 0};
  if (cg_read_run_logs(log, &file, 1) != 0) {
    cg_error(me, "cannot read the run's log %s: %s", path, strerror(errno));
    cgl_free(log);
    return -1;
  }
  cgr_report_build(r, log, NULL, SIZE_MAX);
  return 0;
}

static void free_report(cgl_log *log, cgr_report *r) {
  cgr_report_free(r);
  cgl_free(log);
}

/* How many of the run's loads were recorded, and why the others could not
 * be: a learn is trusted only when it says what it left out. */
static void say_recorded(const cgr_load_facts *f) {
  size_t not = f->failed + f->foreign, recorded = f->loads - f->served - not;
  fprintf(stderr, "%s: %zu load%s recorded, %zu could not be%s", LEARN_NAME, recorded, cg_plural(recorded), not,
          not ? ":" : "\n");
  if (f->failed)
    fprintf(stderr, " %zu failed in the driver (a load that fails is not recorded)%s", f->failed,
            f->foreign ? ";" : "\n");
  if (f->foreign)
    fprintf(stderr, " %zu passed %s, which capguard cannot reproduce (never served, so never recorded)\n",
            f->foreign, f->foreign_name ? f->foreign_name : "an option");
}

/* ---- learn ---- */

#define LEARN LEARN_NAME
static const char LEARN_USAGE[] =
    "capguard prime learn [--prime FILE] [--log FILE] [--label TEXT] -- CMD [ARGS...]";
#define CHECK CHECK_NAME
static const char CHECK_USAGE[] = "capguard prime check [--prime FILE] [--log FILE] -- CMD [ARGS...]";

static int learn_target(const char *me, const char *prime, bool named) {
  char why[PATH_MAX * 2 + 256], shown[PATH_MAX];
  if (cg_prime_usable(prime, named, false, why, sizeof why) != 0) {
    char *advice = strstr(why, "; pass "); /* run's, which may also serve read-only: learn only records */
    if (advice)
      *advice = '\0';
    cg_error(me, "priming file %s %s: pass a --prime learn can write; nothing was run",
             cg_printable(prime, shown, sizeof shown), why);
    return -1;
  }
  if (!named)
    (void)cg_make_parent(prime); /* a directory it cannot make: the shim says so */
  return 0;
}

/* Arguments, the priming file and the log: 0, -1 after --help, or an exit
 * status. The log is kept either way: capguard run's summary names it. */
static int prepare(const char *me, const char *usage, int argc, char **argv, learn_opts *o, char *prime,
                   size_t cap, char *log, size_t log_cap) {
  int rc = parse(me, usage, argc, argv, o);
  if (rc)
    return rc;
  /* refused before anything starts, as capguard run refuses them */
  if ((rc = cg_preflight_env_names(me)) != 0 || (rc = cg_preflight_command(me, o->cmd[0])) != 0)
    return rc;
  if (o->prime) {
    int oci_rc = cg_prime_resolve_oci(me, o->prime, prime, cap); /* oci:DIR: imported, digests checked */
    if (oci_rc)
      return oci_rc;
  } else if (cg_cli_prime_for(o->cmd, prime, cap) != 0) { /* as capguard run picks it */
    cg_error(me, "cannot tell where the priming file is (CAPGUARD_PRIME, XDG_CACHE_HOME and HOME are "
                 "unset); pass --prime FILE");
    return CG_EXIT_USAGE;
  }
  bool named = o->prime != NULL;
  o->prime = prime;
  /* A file the shim would not read, or (for check) none at all, is said now,
   * before the command starts: a run would only learn or check nothing. */
  char why[PATH_MAX + 512], shown[PATH_MAX];
  cg_precheck pc = cg_prime_precheck(prime, why, sizeof why, NULL);
  if (pc == CG_PRECHECK_BAD || (pc == CG_PRECHECK_MISSING && me == CHECK_NAME)) {
    cg_error(me, "priming file %s %s%s", cg_printable(prime, shown, sizeof shown), why,
             pc == CG_PRECHECK_MISSING ? ": nothing to check (learn it first with capguard prime "
                                         "learn, or check the path)"
                                       : "");
    return CG_EXIT_USAGE;
  }
  /* learn records: a file it cannot record into (a read-only filesystem) is
   * said now; the default's missing directories are made as the shim would */
  if (me == LEARN_NAME && learn_target(me, prime, named) != 0)
    return CG_EXIT_USAGE;
  char log_why[PATH_MAX + 256];
  if (o->log && cg_log_usable(o->log, log_why, sizeof log_why) != 0) {
    cg_error(me, "the log %s %s", cg_printable(o->log, shown, sizeof shown), log_why);
    return CG_EXIT_USAGE;
  }
  if (o->log)
    snprintf(log, log_cap, "%s", o->log);
  else if (cg_temp_log(me == CHECK_NAME ? "capguard-check" : "capguard-learn", log, log_cap) != 0) {
    cg_error(me, "cannot create a temporary log: %s; pass --log FILE", strerror(errno));
    return CG_EXIT_RUN_FAILED;
  }
  return 0;
}

/* The run's log, after the verdict: a temporary one (no --log) is removed
 * when the verdict is good, else kept and said to be temporary; one the user
 * named is named. Nothing is left in /tmp unlabelled. */
static void own_log(const char *me, const learn_opts *o, const char *log, bool failed) {
  char word[PATH_MAX + 64] = "";
  size_t used = 0;
  if (!o->log && !failed) {
    unlink(log);
    return;
  }
  if (!o->log && access(log, F_OK) != 0) /* run removed it: it held nothing */
    return;
  cgr_shell_word(log, word, sizeof word, &used);
  fprintf(stderr, "%s: the run's log: %s%s; details:\n  %s report %s\n", me, log,
          o->log ? "" : " (a temporary file, kept for the command below: delete it when done)",
          cgr_self_word(), word);
}

/* The verdict: the findings table's first row for me that holds, said on
 * out; the loads missing from the file listed after its sentence when it
 * says so. Returns whether it is a failure. */
static bool missing_load(const cgl_event *e) {
  return e->kind == CG_EV_MODULE_LOAD && e->verdict != CG_VERDICT_SERVED;
}
/* The same image: the same bytes (interned hashes: equal pointers). */
static bool same_image(const cgl_event *a, const cgl_event *b) {
  return a->image_hash && a->image_hash == b->image_hash;
}
static bool listed_before(const cgr_rows *l, size_t i) {
  for (size_t k = 0; k < i; k++)
    if (missing_load(&l->evs[k]) && same_image(&l->evs[k], &l->evs[i]))
      return true;
  return false;
}

static int by_pid(const void *x, const void *y) {
  long long a = *(const long long *)x, b = *(const long long *)y;
  return a < b ? -1 : a > b;
}

/* "pid 12" or "pids 12, 14, 15": every process that loaded event i's image
 * (a process that loaded it twice named once), in order of pid. */
static void say_pids(FILE *out, const cgr_rows *l, size_t i) {
  const cgl_event *e = &l->evs[i];
  long long *pids = cg_xrealloc(NULL, (l->n_procs + 1) * sizeof *pids, "listing the processes");
  size_t n = 0;
  for (size_t j = i; j < l->n_evs; j++) {
    const cgl_event *f = &l->evs[j];
    if (!missing_load(f) || (j != i && !same_image(f, e)))
      continue;
    bool seen = false;
    for (size_t k = 0; k < n && !seen; k++)
      seen = pids[k] == l->procs[f->proc].pid;
    if (!seen && n <= l->n_procs)
      pids[n++] = l->procs[f->proc].pid;
  }
  qsort(pids, n, sizeof *pids, by_pid);
  fputs(n == 1 ? "pid " : "pids ", out);
  for (size_t k = 0; k < n; k++)
    fprintf(out, "%s%lld", k ? ", " : "", pids[k]);
  free(pids);
}

static bool verdict(FILE *out, const char *me, unsigned audience, const cgf_prime_run *r,
                    const cgr_rows *l) {
  cgf_facts facts = {.prime_run = r};
  cgf_list list;
  const cgf_finding *x = cgf_first(&facts, audience, &list);
  if (!x)
    return false;
  bool fails = x->fails;
  char first[64];
  snprintf(first, sizeof first, "%s: ", me);
  if (!x->lists_loads) {
    cgf_print(out, x, first, "  ");
    cgf_list_free(&list);
    return fails;
  }
  fprintf(out, "%s%s:\n", first, x->sentence);
  /* each image once, with every process that loaded it (workers load alike) */
  for (size_t i = 0; i < l->n_evs; i++) {
    const cgl_event *e = &l->evs[i];
    if (!missing_load(e) || listed_before(l, i))
      continue;
    char site[512], kernels[256];
    cgl_event_site(e, site, sizeof site);
    cgr_kernel_list(e, 8, kernels, sizeof kernels);
    fprintf(out, "  %s  %s %.12s  kernels: %s  at %s (", e->call ? e->call : "?",
            e->image_kind < CG_IMAGE_KIND_COUNT ? cg_image_kind_name(e->image_kind) : "?",
            e->image_hash ? e->image_hash : "?", kernels[0] ? kernels : "-", site);
    say_pids(out, l, i);
    fputs(")\n", out);
  }
  cgf_finding rest = *x;
  rest.sentence = NULL;
  for (size_t k = 0; k < rest.n_commands; k++)
    fprintf(out, "%s%s:\n    %s\n", first, rest.commands[k].lead, rest.commands[k].text);
  cgf_list_free(&list);
  return fails;
}

static void quiet_line(void *ctx, const char *line) { (void)ctx, (void)line; }
static void warn_stderr(void *ctx, const char *line) {
  (void)ctx;
  fprintf(stderr, "%s\n", line);
}

/* What the file is for, written once per learn (after the run: the driver
 * and GPU are the ones its processes saw). A file the run never created
 * gets none: there is nothing it could serve. */
static void write_identity(const char *prime, const learn_opts *o, const cgr_load_facts *f) {
  cg_prime_set *s = NULL;
  if (access(prime, F_OK) != 0 || cg_prime_load(prime, &s, quiet_line, NULL) != 0)
    return;
  cg_prime_identity id = {.format_version = cg_prime_format_version(),
                          .driver_version = f->driver > 0 ? (unsigned)f->driver : 0,
                          .device_sm = f->device_sm > 0 ? (unsigned)f->device_sm : 0,
                          .written_ns = (uint64_t)time(NULL) * 1000000000u};
  const cg_prime_identity *had = cg_prime_identity_of(s);
  snprintf(id.label, sizeof id.label, "%s", o->label ? o->label : had ? had->label : "");
  cg_prime_free(s);
  char cmdline[4096];
  size_t len = 0;
  for (char **w = o->cmd; *w && len + strlen(*w) + 1 <= sizeof cmdline; w++) {
    memcpy(cmdline + len, *w, strlen(*w) + 1);
    len += strlen(*w) + 1;
  }
  cg_prime_program_name(cmdline, len, id.program, sizeof id.program);
  if (cg_prime_set_identity(prime, &id, warn_stderr, NULL) == 0)
    fprintf(stderr, "%s: identity: %s, driver %u, sm_%u%s%s\n", LEARN, id.program, id.driver_version,
            id.device_sm, id.label[0] ? ", label " : "", id.label);
}

int cg_cmd_prime_learn(int argc, char **argv) {
  learn_opts o = {0};
  char prime[PATH_MAX], log[PATH_MAX];
  int rc = prepare(LEARN, LEARN_USAGE, argc, argv, &o, prime, sizeof prime, log, sizeof log);
  if (rc)
    return rc < 0 ? CG_EXIT_OK : rc;
  /* Learning under emulation would learn nothing past the first refusal. */
  if (getenv("CAPGUARD_EMULATE_DRIVER")) {
    fprintf(stderr, "%s: CAPGUARD_EMULATE_DRIVER is ignored while learning\n", LEARN);
    unsetenv("CAPGUARD_EMULATE_DRIVER");
  }
  size_t n_before;
  loads_seen *before = snapshot(prime, &n_before);
  setenv("CAPGUARD_QUIET", "1", 1); /* the log keeps every load; the summary says what counts */
  setenv("CAPGUARD_VERDICT_FOLLOWS", LEARN, 1); /* run's summary leaves what to do to learn */
  unsetenv("CAPGUARD_PRIME_READONLY");
  const char *const extra[] = {"--mode", cg_run_mode_name(CG_RUN_GUARD)};
  int status = run_under_capguard(LEARN, &o, log, extra, 2);
  cgl_log l;
  cgr_report rep;
  if (read_report(LEARN, log, &l, &rep) != 0) {
    free(before);
    return CG_EXIT_RUN_FAILED;
  }
  const cgr_load_facts f = rep.loads;
  fprintf(stderr, "%s: %zu load%s during capture in %zu process%s (%zu served from the file)\n", LEARN, f.loads,
         cg_plural(f.loads), f.procs, cg_plural_es(f.procs), f.served);
  say_recorded(&f);
  unsigned arch;
  fprintf(stderr, "%s: recorded into %s:\n", LEARN, prime);
  size_t changed = print_learned(prime, before, n_before, &arch);
  if (!changed && f.failed)
    fprintf(stderr,
            "  nothing new: %zu load%s during capture failed, and a load that fails is not recorded\n",
            f.failed, cg_plural(f.failed));
  else if (!changed)
    fprintf(stderr, "  nothing new: the file already held every load this run made during capture\n");
  free(before);
  write_identity(prime, &o, &f);
  cgf_prime_run r = {.procs = f.procs,
                     .loads = f.loads,
                     .served = f.served,
                     .refused = f.refused,
                     .failed = f.failed,
                     .first_failed = f.failed ? f.first_failed : NULL,
                     .foreign = f.foreign,
                     .foreign_name = f.foreign_name,
                     .old_driver = f.old_driver,
                     .device_sm = f.device_sm,
                     .learned_arch = arch,
                     .status = status,
                     .prime = prime,
                     .cmd = o.cmd};
  int out = verdict(stderr, LEARN, CGF_LEARN, &r, &rep.rows) ? CG_EXIT_FINDING : status;
  own_log(LEARN, &o, log, out != CG_EXIT_OK);
  free_report(&l, &rep);
  return out;
}

/* ---- check ---- */

int cg_cmd_prime_check(int argc, char **argv) {
  learn_opts o = {0};
  char prime[PATH_MAX], log[PATH_MAX];
  int rc = prepare(CHECK, CHECK_USAGE, argc, argv, &o, prime, sizeof prime, log, sizeof log);
  if (rc)
    return rc < 0 ? CG_EXIT_OK : rc;
  /* The file is used, never changed: a check that wrote to it would pass the
   * next time for having failed this time. */
  setenv("CAPGUARD_PRIME_READONLY", "1", 1);
  setenv("CAPGUARD_QUIET", "1", 1);
  setenv("CAPGUARD_VERDICT_FOLLOWS", CHECK, 1); /* run's summary leaves what to do to check */
  unsetenv("CAPGUARD_RESCUE");
  const char *const extra[] = {"--mode", cg_run_mode_name(CG_RUN_GUARD), "--emulate-driver",
                               EMULATED_OLD_DRIVER};
  int status = run_under_capguard(CHECK, &o, log, extra, 4);
  cgl_log l;
  cgr_report rep;
  if (read_report(CHECK, log, &l, &rep) != 0)
    return CG_EXIT_RUN_FAILED;
  const cgr_load_facts f = rep.loads;
  cgf_prime_run r = {.procs = f.procs, .loads = f.loads, .served = f.served,
                     .refused = f.refused, .old_driver = f.old_driver, .device_sm = f.device_sm,
                     .foreign = f.foreign, .foreign_name = f.foreign_name, .differ = f.differ,
                     .differ_how = f.differ_how, .status = status, .prime = prime, .cmd = o.cmd};
  bool failed = verdict(stderr, CHECK, CGF_CHECK, &r, &rep.rows);
  /* a command that failed with every load served fails with its own status */
  int out = !failed ? CG_EXIT_OK : f.procs && f.loads == f.served ? status : CG_EXIT_FINDING;
  own_log(CHECK, &o, log, out != CG_EXIT_OK);
  free_report(&l, &rep);
  return out;
}
