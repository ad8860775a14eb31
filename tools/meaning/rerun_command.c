#include "rerun_command.h"
#include "capguard/char_class.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void append(char *buf, size_t cap, size_t *used, const char *s) {
  int n = snprintf(buf + *used, cap - *used, "%s", s);
  if (n > 0)
    *used = *used + (size_t)n < cap ? *used + (size_t)n : cap - 1;
}

/* The length of the UTF-8 character at p (2 to 4 bytes, well formed: no
 * overlong form, no surrogate, nothing past U+10FFFF), 0 when the bytes there
 * are not one. */
static size_t utf8_char(const unsigned char *p) {
  size_t n = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
             : p[0] >= 0xe0 && p[0] <= 0xef ? 3
             : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                            : 0;
  if (!n)
    return 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80)
      return 0;
  if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) || (p[0] == 0xf0 && p[1] < 0x90) ||
      (p[0] == 0xf4 && p[1] >= 0x90))
    return 0;
  return n;
}

/* A byte a terminal's copy and paste cannot carry as it is: a control
 * character (a newline would end the command there, a tab may be expanded)
 * or a byte that is not part of a UTF-8 character. */
static bool unpastable(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t n = *p < 0x80 ? 1 : utf8_char(p);
    if (!n || cg_is_control(*p))
      return true;
    p += n;
  }
  return false;
}

/* s as bash's $'...': a control character as \n, \t... or \xNN (always two
 * digits, so a hex digit after it stays a character of its own), a byte
 * that is not UTF-8 as \xNN, \ and ' escaped; everything else as it is. */
static void ansi_c_word(const char *s, char *buf, size_t cap, size_t *used) {
  append(buf, cap, used, "$'");
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t n = *p < 0x80 ? 1 : utf8_char(p);
    char one[8] = "";
    const char *named = *p == '\n'   ? "\\n"
                        : *p == '\t' ? "\\t"
                        : *p == '\r' ? "\\r"
                        : *p == '\\' ? "\\\\"
                        : *p == '\'' ? "\\'"
                                     : NULL;
    if (named)
      snprintf(one, sizeof one, "%s", named);
    else if (!n || cg_is_control(*p))
      snprintf(one, sizeof one, "\\x%02x", *p);
    else
      memcpy(one, p, n);
    append(buf, cap, used, one);
    p += n ? n : 1;
  }
  append(buf, cap, used, "'");
}

void cgr_shell_word(const char *s, char *buf, size_t cap, size_t *used) {
  bool plain = *s != '\0';
  for (const char *p = s; *p && plain; p++)
    plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-", *p);
  if (plain) {
    append(buf, cap, used, s);
    return;
  }
  /* a word a paste would change: bash's $'...', which says every byte in
   * printable characters and gives back exactly those bytes */
  if (unpastable(s)) {
    ansi_c_word(s, buf, cap, used);
    return;
  }
  /* '...' with each ' written as '\'' */
  append(buf, cap, used, "'");
  for (const char *p = s; *p; p++) {
    char one[2] = {*p, '\0'};
    append(buf, cap, used, *p == '\'' ? "'\\''" : one);
  }
  append(buf, cap, used, "'");
}

/* Whether the "capguard" a shell finds on PATH is this very executable (or,
 * from a wheel, this package's launcher, which says so in
 * CAPGUARD_LAUNCHER_ON_PATH: python/capguard/__init__.py). */
static bool on_path(const struct stat *self) {
  const char *launcher = getenv("CAPGUARD_LAUNCHER_ON_PATH");
  if (launcher && !strcmp(launcher, "1"))
    return true;
  const char *path = getenv("PATH");
  while (path && *path) {
    const char *end = strchr(path, ':');
    size_t n = end ? (size_t)(end - path) : strlen(path);
    char file[PATH_MAX];
    struct stat st;
    if (n && snprintf(file, sizeof file, "%.*s/capguard", (int)n, path) < (int)sizeof file &&
        stat(file, &st) == 0)
      return st.st_dev == self->st_dev && st.st_ino == self->st_ino;
    path = end ? end + 1 : NULL;
  }
  return false;
}

const char *cgr_self_word(void) {
  static char word[PATH_MAX + 64];
  if (word[0])
    return word;
  struct stat self;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0 || stat("/proc/self/exe", &self) != 0 || on_path(&self)) {
    snprintf(word, sizeof word, "capguard");
    return word;
  }
  exe[n] = '\0';
  /* run by the wheel's launcher (python/capguard/__init__.py): the launcher's
   * path is the command a person ran and can run again */
  const char *launcher = getenv("CAPGUARD_LAUNCHER");
  if (launcher && launcher[0] == '/' && access(launcher, X_OK) == 0 && strlen(launcher) < sizeof exe)
    snprintf(exe, sizeof exe, "%s", launcher);
  size_t used = 0;
  cgr_shell_word(exe, word, sizeof word, &used);
  return word;
}

const char *cgr_run_prime_path(const cgl_log *log, size_t run) {
  if (run >= log->n_runs)
    return "";
  /* the top-level process, else any process of the run that logged one */
  const cgl_process *top = &log->procs[log->runs[run].first_proc];
  if (top->prime && *top->prime)
    return top->prime;
  for (size_t p = 0; p < log->n_procs; p++)
    if (log->procs[p].run_index == run && log->procs[p].prime && *log->procs[p].prime)
      return log->procs[p].prime;
  return "";
}

bool cgr_rerun_command(const cgl_log *log, size_t run, cg_run_mode mode, char *buf, size_t cap) {
  char opts[64] = "";
  bool named = mode < CG_RUN_MODE_COUNT;
  if (named)
    snprintf(opts, sizeof opts, "--mode %s", cg_run_mode_name(mode));
  return cgr_rerun_command_with(log, run, named ? opts : NULL, buf, cap);
}

bool cgr_rerun_command_with(const cgl_log *log, size_t run, const char *options, char *buf,
                            size_t cap) {
  return cgr_command_for(log, run, "capguard run", options, true, buf, cap);
}

static char kept_options[2048]; /* the CLI is single-threaded */

void cgr_rerun_keep_options(const char *words) {
  snprintf(kept_options, sizeof kept_options, "%s", words ? words : "");
}

bool cgr_command_for(const cgl_log *log, size_t run, const char *head, const char *options,
                     bool emulation, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  bool run_again = !strcmp(head, "capguard run");
  /* "capguard ..." as a shell here finds it: the full path when it is not on PATH */
  if (!strncmp(head, "capguard ", 9)) {
    append(buf, cap, &used, cgr_self_word());
    head += 8;
  }
  append(buf, cap, &used, head);
  if (run_again && kept_options[0]) {
    append(buf, cap, &used, " ");
    append(buf, cap, &used, kept_options);
  }
  if (options) {
    append(buf, cap, &used, " ");
    append(buf, cap, &used, options);
  }
  const char *prime = cgr_run_prime_path(log, run);
  if (*prime) {
    append(buf, cap, &used, " --prime ");
    cgr_shell_word(prime, buf, cap, &used);
  }
  const cgl_process *top = run < log->n_runs ? &log->procs[log->runs[run].first_proc] : NULL;
  long long emulate = 0;
  for (size_t p = 0; p < log->n_procs && !emulate; p++)
    if (log->procs[p].run_index == run)
      emulate = cgl_process_num(&log->procs[p], CGL_PR_EMULATE_DRIVER);
  if (emulation && emulate > 0 && !(options && strstr(options, "--emulate-driver"))) {
    char v[48];
    snprintf(v, sizeof v, " --emulate-driver %lld", emulate);
    append(buf, cap, &used, v);
  }
  append(buf, cap, &used, " --");
  if (!top || !top->argc) {
    append(buf, cap, &used, " CMD");
    return false;
  }
  for (size_t i = 0; i < top->argc; i++) {
    append(buf, cap, &used, " ");
    cgr_shell_word(cgl_process_rare(top)->argv_exact ? cgl_process_rare(top)->argv_exact->v[i] : top->argv[i],
                   buf, cap, &used);
  }
  /* The shim logs the first 16 words: more may have followed. */
  bool whole = top->argc < CGL_ARGV_MAX;
  if (!whole)
    append(buf, cap, &used, " ...");
  return whole;
}
