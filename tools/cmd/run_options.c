/* run_options.h. Each option is one row: its check, its words in the usage
 * line and in --help, and the variable it sets. */
#include "run_options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capguard/env_value.h"
#include "capguard/log_schema.h"
#include "cli.h"
#include "env_table.h"
#include "shim_path.h"

const char CG_RUN_ME[] = "capguard run";
#define ME CG_RUN_ME

/* Children may chdir: hand them absolute paths. */
static const char *absolute(const char *path, char *buf, size_t cap) {
  if (path[0] == '/')
    return path;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd) || (size_t)snprintf(buf, cap, "%s/%s", cwd, path) >= cap)
    return path;
  return buf;
}

static int take_mode(run_opts *o, const char *v) {
  if (!cg_run_mode_parse(v, &(cg_run_mode){0})) {
    char modes[128];
    cg_word_list(&cg_run_modes, modes, sizeof modes);
    return cg_usage_error(ME, cg_run_usage(), "--mode must be %s, not '%s'", modes, v);
  }
  o->mode = v;
  return 0;
}
static const char *given_mode(const run_opts *o, char *buf, size_t cap) {
  return (void)buf, (void)cap, o->mode;
}

static int take_log(run_opts *o, const char *v) { return o->log = v, 0; }
static const char *given_log(const run_opts *o, char *buf, size_t cap) {
  return (void)buf, (void)cap, o->log;
}

static int take_prime(run_opts *o, const char *v) { return o->prime = v, o->prime_given = true, 0; }
static const char *given_prime(const run_opts *o, char *buf, size_t cap) {
  return o->prime ? absolute(o->prime, buf, cap) : NULL;
}

static int take_emulate(run_opts *o, const char *v) {
  if (cg_parse_driver_version(v, &(int){0}) != 0) /* the shim's own parser */
    return cg_usage_error(ME, cg_run_usage(),
                          "--emulate-driver needs a driver version like 12020 (12.2), not '%s'", v);
  o->emulate = v;
  return 0;
}
static const char *given_emulate(const run_opts *o, char *buf, size_t cap) {
  return (void)buf, (void)cap, o->emulate;
}

static int take_rescue(run_opts *o, const char *v) { return (void)v, o->rescue = true, 0; }
static const char *given_rescue(const run_opts *o, char *buf, size_t cap) {
  return (void)buf, (void)cap, o->rescue ? "1" : NULL;
}

static int take_stale(run_opts *o, const char *v) { return (void)v, o->stale = true, 0; }
static const char *given_stale(const run_opts *o, char *buf, size_t cap) {
  return (void)buf, (void)cap, o->stale ? "1" : NULL;
}

static int take_hang(run_opts *o, const char *v) {
  if (cg_parse_hang_seconds(v, &(unsigned){0}) != 0) /* the shim's own parser */
    return cg_usage_error(ME, cg_run_usage(), "--hang needs a number of seconds from 1 to 86400, not '%s'",
                          v);
  o->hang = v;
  return 0;
}
static const char *given_hang(const run_opts *o, char *buf, size_t cap) {
  return (void)buf, (void)cap, o->hang;
}

static int take_quiet(run_opts *o, const char *v) { return (void)v, o->quiet = true, 0; }
static const char *given_quiet(const run_opts *o, char *buf, size_t cap) {
  return (void)buf, (void)cap, o->quiet ? "1" : NULL;
}

static int take_error_exitcode(run_opts *o, const char *v) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < 1 || n > 255)
    return cg_usage_error(ME, cg_run_usage(), "--error-exitcode needs a status from 1 to 255, not '%s'", v);
  o->error_exitcode = (int)n;
  return 0;
}

static int take_request_loads(run_opts *o, const char *v) {
  if (strcmp(v, "report") && strcmp(v, "error"))
    return cg_usage_error(ME, cg_run_usage(), "--request-path-loads must be report or error, not '%s'", v);
  o->request_loads_fail = !strcmp(v, "error");
  return 0;
}

static int take_metrics(run_opts *o, const char *v) {
  struct stat st;
  if (stat(v, &st) != 0 || !S_ISDIR(st.st_mode) || access(v, W_OK | X_OK) != 0)
    return cg_usage_error(ME, cg_run_usage(), "--metrics needs a directory this user can write, not '%s'", v);
  o->metrics = v;
  return 0;
}
static const char *given_metrics(const run_opts *o, char *buf, size_t cap) {
  return o->metrics ? absolute(o->metrics, buf, cap) : NULL;
}

/* clang-format off */
const cg_run_option cg_run_options[] = {
    {"mode", 0, "--mode guard|report|off", "MODE", "CAPGUARD_MODE", false, take_mode, given_mode,
     "  --mode MODE            guard (default): prime, defer, record; report: change\n"
     "                         nothing, log and report each forbidden call (stderr\n"
     "                         too, unless --quiet); off: do nothing (CAPGUARD_MODE)\n"},
    {"log", 0, "--log FILE", "FILE", "CAPGUARD_LOG", true, take_log, given_log,
     "  --log FILE             append the JSON Lines log to FILE (CAPGUARD_LOG); in FILE,\n"
     "                         %p is each process's pid (a file per process), %h the\n"
     "                         host name, %q{VAR} the variable VAR in each process\n"
     "                         (e.g. %q{RANK}), %% a '%', as valgrind and nsys write them;\n"
     "                         default: a new temporary file, named in the summary and\n"
     "                         removed when nothing was logged (of those kept, the 10\n"
     "                         newest stay)\n"},
    {"prime", 0, "--prime FILE", "FILE", "CAPGUARD_PRIME", false, take_prime, given_prime,
     "  --prime FILE           priming file to read and record into (CAPGUARD_PRIME), in\n"
     "                         a directory that exists (capguard creates none for it);\n"
     "                         default: the program's own, ~/.cache/capguard/prime.d/\n"
     "                         PROGRAM.cgp\n"},
    {"emulate-driver", 0, "--emulate-driver VERSION", "VERSION", "CAPGUARD_EMULATE_DRIVER", false, take_emulate, given_emulate,
     "  --emulate-driver VER   behave like driver VER, e.g. 12020, which refuses module\n"
     "                         loads during capture        (CAPGUARD_EMULATE_DRIVER)\n"},
    {"rescue", 0, "--rescue", NULL, "CAPGUARD_RESCUE", false, take_rescue, given_rescue,
     "  --rescue               make a refused load, or a prohibited allocation, in\n"
     "                         relaxed mode for that one call (CAPGUARD_RESCUE=1);\n"
     "                         guard mode only\n"},
    {"stale", 0, "--stale", NULL, "CAPGUARD_STALE", false, take_stale, given_stale,
     "  --stale                name each free of memory a live CUDA graph exec reads,\n"
     "                         and each replay of memory freed since its capture\n"
     "                         (CAPGUARD_STALE=1; guard and report modes). Blind spot: a\n"
     "                         caching allocator (PyTorch's, CuPy's pool) reuses memory\n"
     "                         without the driver; capguard sees only what it gives back\n"
     "                         (empty_cache, expandable segments unmapping, a retry after\n"
     "                         OOM, free_all_blocks)\n"},
    {"hang", 0, "--hang SECONDS", "SECONDS", "CAPGUARD_HANG_S", false, take_hang, given_hang,
     "  --hang SECONDS         say each capture open, and each thread waiting in a\n"
     "                         driver call, for SECONDS or more (1-86400), with where\n"
     "                         it began (CAPGUARD_HANG_S; docs/hangs.md)\n"},
    {"quiet", 'q', "--quiet", NULL, "CAPGUARD_QUIET", false, take_quiet, given_quiet,
     "  -q, --quiet            no per-event reports on stderr, only warnings and the\n"
     "                         summary at the end; the log keeps every event\n"
     "                         (CAPGUARD_QUIET=1)\n"},
    {"error-exitcode", 0, "--error-exitcode N", "N", NULL, false, take_error_exitcode, NULL,
     "  --error-exitcode N     exit N (1-255) when a capture broke or a stale read was\n"
     "                         named (--stale), whatever CMD's status\n"},
    {"request-path-loads", 0, "--request-path-loads report|error", "report|error", NULL, false, take_request_loads, NULL,
     "  --request-path-loads report|error\n"
     "                         a module load after serving began (the first graph launch\n"
     "                         after the start-up's last capture) costs a request its\n"
     "                         latency: report (default) says each; error also exits N of\n"
     "                         --error-exitcode, else CMD's status, else 1, when one happened\n"},
    {"metrics", 0, "--metrics DIR", "DIR", "CAPGUARD_METRICS", false, take_metrics, given_metrics,
     "  --metrics DIR          each process keeps its figures in DIR/capguard_*.prom, in\n"
     "                         Prometheus's text format, for node_exporter's textfile\n"
     "                         collector (CAPGUARD_METRICS; docs/fleet.md)\n"},
    {"help", 'h', NULL, NULL, NULL, false, NULL, NULL, "  -h, --help             show this help\n"
     "\n"},
};
/* clang-format on */
const size_t cg_run_n_options = sizeof cg_run_options / sizeof cg_run_options[0];

const char *cg_run_usage(void) {
  static char usage[1024];
  if (!usage[0]) {
    size_t used = (size_t)snprintf(usage, sizeof usage, "%s", ME);
    for (size_t i = 0; i < cg_run_n_options && used < sizeof usage; i++)
      if (cg_run_options[i].usage)
        used += (size_t)snprintf(usage + used, sizeof usage - used, " [%s]", cg_run_options[i].usage);
    if (used < sizeof usage)
      snprintf(usage + used, sizeof usage - used, " -- CMD [ARGS...]");
  }
  return usage;
}

void cg_run_help(void) {
  printf("usage: %s\n"
         "\n"
         "Run CMD with the capguard shim (" CG_SHIM_NAME ") preloaded. Child processes are\n"
         "covered too: they inherit LD_PRELOAD and the CAPGUARD_* variables and write to the\n"
         "same log. Signals sent to capguard are forwarded to CMD; capguard exits with CMD's\n"
         "status (128+N if it died of signal N) and then prints a short summary on stderr.\n"
         "It reaps every orphaned descendant, as tini does: it can be a container's PID 1\n"
         "(ENTRYPOINT [\"capguard\", \"run\", \"--\"]).\n"
         "\n",
         cg_run_usage());
  for (size_t i = 0; i < cg_run_n_options; i++)
    fputs(cg_run_options[i].help, stdout);
  fputs("A log or priming file the shim could not write, and a CAPGUARD_* value it would not\n"
        "take, are refused before CMD starts (exit 2).\n"
        "Environment: CAPGUARD_SHIM=/path/to/" CG_SHIM_NAME " overrides where the shim is\n"
        "found. An existing LD_PRELOAD is kept (the shim goes first). CAPGUARD_PRIME_MAX caps\n"
        "the priming file's size (e.g. 256M). CAPGUARD_SUMMARY=1 makes each process print its\n"
        "own exit line too (capguard run sets it to 0: it summarises the run itself).\n"
        "Exit status: CMD's (128+N if it died of signal N), or N of --error-exitcode when a\n"
        "capture broke or a stale read was named; 125 if capguard could not start it, 126 not executable, "
        "127 not\n"
        "found, 2 usage error.\n",
        stdout);
}

const cg_run_option *cg_run_option_for_env(const char *env) {
  for (size_t i = 0; i < cg_run_n_options; i++)
    if (cg_run_options[i].env && !strcmp(cg_run_options[i].env, env))
      return &cg_run_options[i];
  return NULL;
}

/* A value the shim would not take (it would warn, and keep its default, in
 * every process of the run): refused here, as the option's is, unless the
 * option replaces it. One table for run and doctor (env_table.h). */
static int env_values(const run_opts *o) {
  for (size_t i = 0; i < cg_env_n_vars; i++) {
    const cg_env_var *v = &cg_env_vars[i];
    const cg_run_option *opt = cg_run_option_for_env(v->name);
    char buf[4096], line[512], option[64] = "";
    if (opt)
      snprintf(option, sizeof option, "--%s", opt->name);
    if ((!opt || !opt->given(o, buf, sizeof buf)) && cg_env_bad(v, line, sizeof line) != 0)
      return cg_usage_error(ME, NULL, "%s; unset it%s%s", line, opt ? " or pass " : "", option);
  }
  return 0;
}

int cg_run_parse_options(int argc, char **argv, run_opts *o, int *cmd_at) {
  struct option opts[sizeof cg_run_options / sizeof cg_run_options[0] + 1];
  char shorts[2 * sizeof cg_run_options / sizeof cg_run_options[0] + 3] = "+:";
  size_t n_shorts = 2;
  for (size_t i = 0; i < cg_run_n_options; i++) {
    const cg_run_option *r = &cg_run_options[i];
    opts[i] = (struct option){r->name, r->arg ? required_argument : no_argument, NULL, (int)(0x100 + i)};
    if (r->short_name)
      shorts[n_shorts++] = r->short_name;
  }
  opts[cg_run_n_options] = (struct option){NULL, 0, NULL, 0};
  shorts[n_shorts] = '\0';
  int c;
  opterr = 0;
  optind = 1;
  /* '+': stop at the first non-option, so CMD's own options are left alone. */
  while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
    if (c == ':')
      return cg_usage_error(ME, cg_run_usage(), "%s needs a value", argv[optind - 1]);
    const cg_run_option *r = NULL;
    for (size_t i = 0; i < cg_run_n_options && !r; i++)
      if (c == (int)(0x100 + i) || (cg_run_options[i].short_name && c == cg_run_options[i].short_name))
        r = &cg_run_options[i];
    if (!r)
      return cg_usage_error(ME, cg_run_usage(), "unknown option '%s'", argv[optind - 1]);
    if (!r->take) { /* --help */
      cg_run_help();
      return -1;
    }
    int rc = r->take(o, optarg);
    if (rc)
      return rc;
  }
  int rc = env_values(o);
  if (rc)
    return rc;
  *cmd_at = optind;
  return 0;
}
