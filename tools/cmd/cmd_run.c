/* capguard run [options] -- CMD [ARGS...]: run CMD with the shim preloaded
 * (children inherit LD_PRELOAD and CAPGUARD_*), forward signals, exit with
 * CMD's status, then summarise what the log says about this run. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capguard/log_file.h"
#include "capguard/log_name.h"
#include "cli.h"
#include "ended_record.h"
#include "capguard/env_value.h"
#include "commands.h"
#include "env_table.h"
#include "run_options.h"
#include "path_check.h"
#include "preflight.h"
#include "cmd_prime_oci.h"
#include "prime_precheck.h"
#include "rerun_command.h"
#include "reap.h"
#include "run_end.h"
#include "shim_path.h"

#define ME CG_RUN_ME
#define USAGE cg_run_usage()

/* The options (run_options.c: one row each), then what holds between them. */
static int parse(int argc, char **argv, run_opts *o, int *cmd_at) {
  int rc = cg_run_parse_options(argc, argv, o, cmd_at);
  if (rc)
    return rc;
  if (*cmd_at >= argc)
    return cg_usage_error(ME, USAGE, "missing command after --");
  if (o->log && !*o->log)
    return cg_usage_error(ME, USAGE, "--log needs a file name");
  /* --rescue acts in guard mode only: in report or off it would be ignored without a word */
  const char *mode = o->mode ? o->mode : getenv("CAPGUARD_MODE");
  if (o->rescue && mode && *mode && strcmp(mode, cg_run_mode_name(CG_RUN_GUARD)))
    return cg_usage_error(ME, USAGE, "--rescue works in guard mode only, not with %s%s (report "
                                     "and off leave every call to the driver)",
                          o->mode ? "--mode " : "CAPGUARD_MODE=", mode);
  /* --stale watches what the program frees: off mode watches nothing */
  if (o->stale && mode && *mode && !strcmp(mode, cg_run_mode_name(CG_RUN_OFF)))
    return cg_usage_error(ME, USAGE, "--stale works in guard and report modes, not with %s%s (off passes "
                                     "every call through unwatched)",
                          o->mode ? "--mode " : "CAPGUARD_MODE=", mode);
  return 0;
}

/* Children may chdir: hand them absolute paths. */
static const char *absolute(const char *path, char *buf, size_t cap) {
  if (path[0] == '/')
    return path;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd) || (size_t)snprintf(buf, cap, "%s/%s", cwd, path) >= cap)
    return path;
  return buf;
}

static int setup_env(const run_opts *o, const char *shim, const char *log, const char *run_id) {
  const char *old = getenv("LD_PRELOAD");
  char *preload = NULL;
  /* Keep what was there; the shim goes first, and only once (nested runs). */
  if (old && *old && strstr(old, shim))
    preload = strdup(old);
  else if (old && *old) {
    if (asprintf(&preload, "%s:%s", shim, old) < 0)
      preload = NULL;
  } else
    preload = strdup(shim);
  if (!preload)
    return -1;
  int rc = setenv("LD_PRELOAD", preload, 1);
  free(preload);
  rc |= setenv("CAPGUARD_LOG", log, 1);
  /* capguard run summarises every process of the run at the end, so each
   * process's own exit line would only repeat it (the user may still ask). */
  rc |= setenv("CAPGUARD_SUMMARY", "0", 0);
  /* Names this run's processes in the log, so that its summary (and capguard
   * report) tells this run from others appended to the same log. */
  rc |= setenv("CAPGUARD_RUN", run_id, 1);
  /* each option's variable (run_options.c), the log's aside (set above) */
  for (size_t i = 0; i < cg_run_n_options; i++) {
    const cg_run_option *r = &cg_run_options[i];
    char buf[PATH_MAX];
    const char *value = r->env && !r->env_by_run ? r->given(o, buf, sizeof buf) : NULL;
    if (value)
      rc |= setenv(r->env, value, 1);
  }
  /* the shim's advice about the file then names --prime, which the user typed */
  if (o->prime_given)
    rc |= setenv("CAPGUARD_PRIME_OPTION", "--prime", 1);
  return rc;
}

/* A fresh, private temporary log (the shim appends to it). */

/* The log files of a run: the log itself, or with %p or %q{VAR} in its name,
 * every file the pattern names (one per process). */
typedef struct {
  cg_run_log_file *f;
  size_t n;
} log_files;

static void free_logs(log_files *l) {
  for (size_t i = 0; i < l->n; i++)
    free((char *)l->f[i].path);
  free(l->f);
  l->f = NULL;
  l->n = 0;
}

static void add_log(log_files *l, const char *path) {
  cg_run_log_file *f = realloc(l->f, (l->n + 1) * sizeof *f);
  char *copy = strdup(path);
  if (!f || !copy) {
    free(copy);
    if (f)
      l->f = f;
    return;
  }
  l->f = f;
  struct stat st;
  f[l->n].path = copy;
  f[l->n++].offset = stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static void list_logs(const char *log, log_files *out) {
  if (!cg_log_name_varies(log)) { /* one file: the name as the shim expands it (%h, %%) */
    char name[PATH_MAX];
    add_log(out, cg_log_name_expand(log, name, sizeof name) == 0 ? name : log);
    return;
  }
  glob_t g;
  if (cg_log_pattern_glob(log, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++)
      add_log(out, g.gl_pathv[i]);
    globfree(&g);
  }
}

/* The fallback log after the run: removed when no process wrote to it;
 * else read with the logs, and said. true when a process that used CUDA
 * (more than a start record: a launcher's parent has no RANK and never
 * captures) wrote there: its log was not where it was asked to be. */
static bool unplaced_log(const char *fallback, log_files *logs) {
  FILE *f = fopen(fallback, "r");
  size_t records = 0, used_cuda = 0;
  char line[256];
  bool line_start = true;
  while (f && fgets(line, sizeof line, f)) {
    if (line_start) {
      records++;
      used_cuda += !strstr(line, "\"type\":\"start\"");
    }
    line_start = strchr(line, '\n') != NULL;
  }
  if (f)
    fclose(f);
  if (!records) {
    unlink(fallback);
    return false;
  }
  if (!used_cuda) { /* start records only: launchers' parents, which have no rank */
    unlink(fallback);
    return false;
  }
  add_log(logs, fallback);
  cg_error(ME,
           "a process's log name was refused, or its log could not be opened (its warning above says "
           "why): its records are in %s",
           fallback);
  return true;
}

static volatile sig_atomic_t child_pid;

/* Forward what was sent to capguard. A terminal's Ctrl-C or hangup (si_code
 * SI_KERNEL) already reached CMD, which shares our process group: sending it
 * again would make CMD see it twice. */
static void forward(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  if (child_pid > 0 && !(si && si->si_code == SI_KERNEL))
    kill((pid_t)child_pid, sig);
}

/* The signals tini and dumb-init forward, less those a terminal or the
 * kernel sends to a process for what it did itself (SIGSEGV, SIGPIPE...). */
static const int FORWARDED[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH, SIGCONT,
                                SIGPWR, SIGURG, SIGVTALRM, SIGPROF, SIGXCPU};
#define N_FORWARDED (sizeof FORWARDED / sizeof FORWARDED[0])

/* Fork and exec argv; returns the exit status to report (CMD's, or 126/127/125).
 * *pid and *signal: CMD's pid, and the signal that killed it (0: none). */
static int spawn_and_wait(char **argv, bool *started, long long *cmd_pid, int *signal) {
  *started = false;
  *signal = 0;
  int errpipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0) {
    cg_error(ME, "cannot create a pipe: %s", strerror(errno));
    return CG_EXIT_RUN_FAILED;
  }
  sigset_t all, old;
  sigemptyset(&all);
  for (size_t i = 0; i < N_FORWARDED; i++)
    sigaddset(&all, FORWARDED[i]);
  /* No signal may arrive between fork and knowing the child's pid. */
  sigprocmask(SIG_BLOCK, &all, &old);
  cg_reap_adopt_orphans();
  struct sigaction sa, saved[N_FORWARDED];
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < N_FORWARDED; i++)
    sigaction(FORWARDED[i], &sa, &saved[i]);
  pid_t pid = fork();
  if (pid == 0) {
    for (size_t i = 0; i < N_FORWARDED; i++)
      sigaction(FORWARDED[i], &saved[i], NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(errpipe[0]);
    execvp(argv[0], argv);
    int e = errno;
    if (write(errpipe[1], &e, sizeof e) < 0) { /* the parent then sees no error: nothing to do */ }
    _exit(127);
  }
  int fork_errno = errno;
  if (pid > 0)
    child_pid = pid;
  *cmd_pid = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  close(errpipe[1]);
  if (pid < 0) {
    close(errpipe[0]);
    cg_error(ME, "cannot start '%s': %s", argv[0], strerror(fork_errno));
    return CG_EXIT_RUN_FAILED;
  }
  int exec_errno = 0;
  ssize_t n;
  while ((n = read(errpipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(errpipe[0]);
  int status = 0;
  if (cg_reap_wait_for(pid, &status) != 0) {
    cg_error(ME, "lost track of '%s': %s", argv[0], strerror(errno));
    return CG_EXIT_RUN_FAILED;
  }
  child_pid = 0;
  for (size_t i = 0; i < N_FORWARDED; i++)
    sigaction(FORWARDED[i], &saved[i], NULL);
  *started = n != (ssize_t)sizeof exec_errno;
  if (!*started) {
    bool missing = exec_errno == ENOENT;
    cg_error(ME, "cannot run '%s': %s; %s", argv[0], strerror(exec_errno),
             missing ? "check the command name and PATH" : "check its permissions");
    return missing ? 127 : 126;
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    *signal = WTERMSIG(status);
    return 128 + WTERMSIG(status);
  }
  return CG_EXIT_RUN_FAILED;
}

/* The options the log does not keep, for the commands the summary gives:
 * the run the summary advises keeps the log, the quiet and the exit status asked for. */
static void keep_options(const run_opts *o) {
  char words[2048] = "";
  size_t used = 0;
  if (o->log) {
    used = (size_t)snprintf(words, sizeof words, "--log ");
    cgr_shell_word(o->log, words, sizeof words, &used); /* as typed: %p stays %p */
  }
  if (o->quiet && used + 4 < sizeof words)
    used += (size_t)snprintf(words + used, sizeof words - used, "%s-q", used ? " " : "");
  if (o->error_exitcode && used + 24 < sizeof words)
    snprintf(words + used, sizeof words - used, "%s--error-exitcode %d", used ? " " : "",
             o->error_exitcode);
  cgr_rerun_keep_options(words);
}

/* The priming file: --prime, else the caller's CAPGUARD_PRIME, else the
 * program's own (cg_cli_prime_for), so that it never preloads another
 * program's images. One the shim would not read is named now, before the
 * command starts; 0, or the usage error's exit status. */
static int choose_prime(run_opts *o, char **cmd, char *own_prime, size_t cap) {
  const char *env_prime = getenv("CAPGUARD_PRIME");
  /* --prime names a file in a directory that exists: capguard run creates none
   * for it (a typo would make a tree, as root). CAPGUARD_PRIME and the default
   * keep the shim's rule, which creates the missing levels. */
  bool prime_named = o->prime != NULL;
  static char from_oci[PATH_MAX]; /* --prime oci:DIR: the artifact imported, digests checked */
  int oci_rc = o->prime ? cg_prime_resolve_oci("capguard run", o->prime, from_oci, sizeof from_oci) : 0;
  if (oci_rc)
    return oci_rc;
  if (o->prime)
    o->prime = from_oci;
  if (!o->prime && !(env_prime && *env_prime) && cg_cli_prime_for(cmd, own_prime, cap) == 0)
    o->prime = own_prime;
  const char *run_mode = o->mode ? o->mode : getenv("CAPGUARD_MODE");
  if (run_mode && *run_mode && strcmp(run_mode, cg_run_mode_name(CG_RUN_GUARD)))
    return 0;
  char prime[PATH_MAX], why[PATH_MAX + 512], shown[PATH_MAX];
  bool readonly = cg_env_true("CAPGUARD_PRIME_READONLY");
  if (!(o->prime ? snprintf(prime, sizeof prime, "%s", o->prime) > 0
                 : cg_cli_prime_default(prime, sizeof prime) == 0))
    return 0;
  cg_precheck pc = cg_prime_precheck(prime, why, sizeof why, NULL);
  if (pc == CG_PRECHECK_OK && !readonly && access(prime, W_OK) != 0 && (errno == EACCES || errno == EROFS)) {
    /* trusted and readable, not writable by this user (a fleet file baked
     * into an image, root's): served read-only, as if CAPGUARD_PRIME_READONLY=1 */
    fprintf(stderr, "%s: priming file %s is not writable by you (%s): served read-only, nothing recorded "
                    "into it (CAPGUARD_PRIME_READONLY=1 asks for this without the note)\n",
            ME, cg_printable(prime, shown, sizeof shown), strerror(errno));
    setenv("CAPGUARD_PRIME_READONLY", "1", 1);
    readonly = true;
  }
  if (pc == CG_PRECHECK_BAD) {
    /* the command still runs (the shim then primes nothing) */
    cg_error(ME, "priming file %s %s; the command runs without priming", cg_printable(prime, shown, sizeof shown),
             why);
    /* said once here: not again by each of the command's processes */
    setenv("CAPGUARD_PRIME_SAID", "1", 1);
  } else if (!(readonly && !prime_named && !(env_prime && *env_prime) && access(prime, F_OK) != 0) &&
             cg_prime_usable(prime, prime_named, readonly, why, sizeof why) != 0) {
    /* a read-only file named (--prime, CAPGUARD_PRIME) must be there; the
     * per-program default, missing, is the summary's to say */
    /* the shim could not record what breaks this run: said now, not after it */
    return cg_usage_error(ME, NULL, "priming file %s %s", cg_printable(prime, shown, sizeof shown), why);
  }
  return 0;
}

int cg_cmd_run(int argc, char **argv) {
  run_opts o = {0};
  int cmd_at = 0;
  int rc = parse(argc, argv, &o, &cmd_at);
  if (rc < 0)
    return CG_EXIT_OK; /* --help */
  if (rc)
    return rc;
  /* refused before anything starts, as doctor flags them */
  if ((rc = cg_preflight_env_names(ME)) != 0 || (rc = cg_preflight_command(ME, argv[cmd_at])) != 0)
    return rc;

  char shim[PATH_MAX], why[PATH_MAX * 2 + 256];
  if (cg_find_shim(shim, sizeof shim, why, sizeof why) != 0) {
    cg_error(ME, "%s", why);
    return CG_EXIT_RUN_FAILED;
  }
  /* The log: --log, else the caller's CAPGUARD_LOG, else a temporary file. */
  char logbuf[PATH_MAX], tmp[PATH_MAX];
  const char *log = o.log ? o.log : getenv("CAPGUARD_LOG");
  bool temporary = false;
  if (!log || !*log) {
    if (cg_temp_log("capguard", tmp, sizeof tmp) != 0) {
      cg_error(ME, "cannot create a temporary log in %s: %s; set TMPDIR or pass --log FILE",
               getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", strerror(errno));
      return CG_EXIT_RUN_FAILED;
    }
    log = tmp;
    temporary = true;
  }
  log = absolute(log, logbuf, sizeof logbuf);
  /* A log the shim could not open would cost the whole run its diagnosis
   * (and the summary would say the shim wrote nothing): said now, before the
   * command starts, under the shim's own rules (capguard/log_file.h). */
  char log_why[PATH_MAX + 128], shown[PATH_MAX];
  /* an expansion this environment makes empty, or a path ('/', '..'): the
   * log would be hidden or misplaced, which --error-exitcode is asked to say */
  if (!temporary && cg_log_name_check(log, log_why, sizeof log_why) == 0 &&
      (cg_log_name_refusal(log, true, log_why, sizeof log_why) != 0 ||
       cg_log_unset_var(log, log_why, sizeof log_why) != 0)) {
    cg_error(ME, "the log %s %s%s; give it a plain value, or name another --log",
             cg_printable(log, shown, sizeof shown), log_why, o.log ? "" : " (from CAPGUARD_LOG)");
    return o.error_exitcode ? o.error_exitcode : CG_EXIT_USAGE;
  }
  if (!temporary && cg_log_usable(log, log_why, sizeof log_why) != 0)
    return cg_usage_error(ME, NULL, "the log %s %s%s", cg_printable(log, shown, sizeof shown), log_why,
                          o.log ? "" : " (from CAPGUARD_LOG)");
  /* where a process's records go when its own log name is refused (a
   * launcher's worker whose RANK is empty) or cannot be opened: read below
   * with the rest, nothing lost */
  char fallback[PATH_MAX] = "";
  if (!temporary && (cg_temp_log("capguard-unplaced", fallback, sizeof fallback) != 0 ||
                     setenv("CAPGUARD_LOG_FALLBACK", fallback, 1) != 0))
    fallback[0] = 0;
  /* Summarise only what this run appends: each log file's size before it. */
  log_files before = {0}, after = {0};
  list_logs(log, &before);

  char own_prime[PATH_MAX];
  if ((rc = choose_prime(&o, argv + cmd_at, own_prime, sizeof own_prime)) != 0)
    return rc;
  char run_id[64];
  snprintf(run_id, sizeof run_id, "%d-%llx", (int)getpid(), (unsigned long long)time(NULL));
  if (setup_env(&o, shim, log, run_id) != 0) {
    cg_error(ME, "cannot set the environment: %s", strerror(errno));
    return CG_EXIT_RUN_FAILED;
  }
  /* prime learn / check run this: their verdict, not this summary, says what to do */
  const char *verdict_by = getenv("CAPGUARD_VERDICT_FOLLOWS");
  char verdict_buf[64] = "";
  if (verdict_by)
    snprintf(verdict_buf, sizeof verdict_buf, "%s", verdict_by);
  unsetenv("CAPGUARD_VERDICT_FOLLOWS");
  bool started;
  long long cmd_pid = 0;
  int signal = 0;
  int status = spawn_and_wait(argv + cmd_at, &started, &cmd_pid, &signal);
  if (!started) {
    if (temporary)
      unlink(log);
    if (fallback[0])
      unlink(fallback);
    free_logs(&before);
    return status;
  }
  list_logs(log, &after);
  bool unplaced = fallback[0] && unplaced_log(fallback, &after);
  /* what a file held before the run is not this run's; a new file is all this run's */
  for (size_t i = 0; i < after.n; i++) {
    after.f[i].offset = 0;
    for (size_t j = 0; j < before.n; j++)
      if (!strcmp(after.f[i].path, before.f[j].path))
        after.f[i].offset = before.f[j].offset;
  }
  /* the signal that killed the command, in the log for the report to read */
  if (signal)
    cg_record_ended(after.f, after.n, cmd_pid, signal);
  /* The mode the shim runs in (a word it does not know was refused above). */
  const char *mode_word = o.mode ? o.mode : getenv("CAPGUARD_MODE");
  cg_run_mode mode = CG_RUN_MODE_COUNT;
  if (mode_word && *mode_word && !cg_run_mode_parse(mode_word, &mode))
    mode = CG_RUN_GUARD;
  const char *said = getenv("CAPGUARD_PRIME_SAID"); /* set above when the file was refused */
  cg_run_logs logs = {after.f, after.n, log, temporary, mode, run_id,
                      verdict_buf[0] ? verdict_buf : NULL, cmd_pid, signal,
                      cg_env_true("CAPGUARD_PRIME_READONLY"), said && !strcmp(said, "1")};
  keep_options(&o);
  cg_run_outcome res;
  cg_run_summary(stderr, &logs, &res);
  cg_reap_ended(); /* orphans that ended while the summary was read */
  free_logs(&before);
  free_logs(&after);
  if (o.error_exitcode && (res.broken || res.stale_reads || unplaced))
    return o.error_exitcode;
  /* The gate a CI run asks for; a production engine is never stopped by it:
   * the run's status is changed after the command ended, never the command. */
  if (o.request_loads_fail && res.request_loads)
    return o.error_exitcode ? o.error_exitcode : status ? status : CG_EXIT_FINDING;
  return status;
}
