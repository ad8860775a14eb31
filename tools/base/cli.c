#include "cli.h"
#include "capguard/char_class.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capguard/log_name.h"
#include "capguard/prime_file.h"

/* Messages echo what they were given (an option's value, a path, a log's
 * text): control characters become '?', so none can drive the terminal. */
static void put_clean(FILE *f, const char *fmt, va_list ap) {
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    return;
  for (char *p = s; *p; p++)
    if (cg_is_control((unsigned char)*p))
      *p = '?';
  fputs(s, f);
  free(s);
}

const char *cg_printable(const char *s, char *buf, size_t cap) {
  size_t n = 0;
  for (; s && *s && n + 1 < cap; s++)
    buf[n++] = cg_is_control((unsigned char)*s) ? '?' : *s;
  if (cap)
    buf[n] = '\0';
  return buf;
}

int cg_usage_error(const char *cmd, const char *usage, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", cmd);
  put_clean(stderr, fmt, ap);
  va_end(ap);
  if (usage)
    fprintf(stderr, "; usage: %s", usage);
  fputc('\n', stderr);
  return CG_EXIT_USAGE;
}

void cg_error_v(const char *cmd, const char *tail, const char *fmt, va_list ap) {
  fprintf(stderr, "%s: ", cmd);
  put_clean(stderr, fmt, ap);
  fputs(tail, stderr);
}

void cg_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cg_error_v(cmd, "\n", fmt, ap);
  va_end(ap);
}

bool cg_use_colour(FILE *f) {
  /* https://no-color.org: present and not empty disables colour. */
  const char *nc = getenv("NO_COLOR");
  if (nc && *nc)
    return false;
  const char *term = getenv("TERM");
  if (term && !strcmp(term, "dumb"))
    return false;
  return isatty(fileno(f));
}

cg_palette cg_palette_for(FILE *f) {
  if (cg_use_colour(f))
    return (cg_palette){"\033[1m", "\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[0m"};
  return (cg_palette){"", "", "", "", "", ""};
}

int cg_cli_prime_default(char *buf, size_t cap) {
  return cg_prime_default_path(getenv("CAPGUARD_PRIME"), getenv("XDG_CACHE_HOME"), getenv("HOME"),
                               buf, cap);
}

/* The program a command runs, as a file name: its command's base name, and
 * for an interpreter the script or module it runs ("python3-serve.py",
 * "python3-m-vllm.entrypoints.openai.api_server"), every byte outside
 * [A-Za-z0-9._-] made '_'. */
static void program_key(char *const *cmd, char *buf, size_t cap) {
  static const char *const interpreters[] = {"python", "python2", "python3", "pypy", "pypy3",
                                             "bash", "sh", "node", "perl", "ruby", "uv", NULL};
  const char *base = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
  char key[256];
  snprintf(key, sizeof key, "%s", *base ? base : "program");
  bool interp = false;
  for (size_t i = 0; interpreters[i] && !interp; i++) {
    size_t n = strlen(interpreters[i]);
    /* python3.11 is python3 */
    interp = !strncmp(base, interpreters[i], n) && (!base[n] || base[n] == '.' || isdigit((unsigned char)base[n]));
  }
  for (size_t i = 1; interp && cmd[i]; i++) {
    if (!strcmp(cmd[i], "-m") && cmd[i + 1]) {
      snprintf(key + strlen(key), sizeof key - strlen(key), "-m-%s", cmd[i + 1]);
      break;
    }
    if (cmd[i][0] == '-')
      continue;
    const char *s = strrchr(cmd[i], '/') ? strrchr(cmd[i], '/') + 1 : cmd[i];
    snprintf(key + strlen(key), sizeof key - strlen(key), "-%s", s);
    break;
  }
  for (char *c = key; *c; c++)
    if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
      *c = '_';
  /* a file name well under NAME_MAX, whatever a script's name (sh -c TEXT) */
  key[100] = '\0';
  snprintf(buf, cap, "%s", key[0] == '.' ? key + 1 : key);
}

int cg_cli_prime_for(char *const *cmd, char *buf, size_t cap) {
  const char *named = getenv("CAPGUARD_PRIME");
  if ((named && *named) || !cmd || !cmd[0])
    return cg_cli_prime_default(buf, cap);
  char shared[PATH_MAX];
  if (cg_cli_prime_default(shared, sizeof shared) != 0)
    return -1;
  char *slash = strrchr(shared, '/');
  if (!slash)
    return -1;
  *slash = '\0';
  char key[256];
  program_key(cmd, key, sizeof key);
  if (!key[0])
    snprintf(key, sizeof key, "program");
  return (size_t)snprintf(buf, cap, "%s/prime.d/%s.cgp", shared, key) < cap ? 0 : -1;
}

void cg_word_list(const cg_words *t, char *buf, size_t cap) {
  size_t used = 0;
  if (cap)
    buf[0] = '\0';
  for (size_t i = 0; i < t->n && used < cap; i++) {
    const char *sep = i == 0 ? "" : i + 1 == t->n ? " or " : ", ";
    int n = snprintf(buf + used, cap - used, "%s%s", sep, cg_word_name(t, (unsigned)i));
    if (n < 0)
      break;
    used += (size_t)n;
  }
}

/* Temporary logs kept (a run that broke keeps its log for the report command
 * its summary gives; learn and check keep theirs) pile up: of this user's,
 * the KEEP_TEMP_LOGS newest stay, and older ones go once an hour old. Only
 * the names cg_temp_log makes, regular files of this user, never a link. */
#define KEEP_TEMP_LOGS 10
typedef struct {
  char *path;
  time_t mtime;
} temp_log;
static int newest_first(const void *a, const void *b) {
  const temp_log *x = a, *y = b;
  return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : 0;
}
static void prune_temp_logs(const char *dir, const char *made) {
  static const char *const forms[] = {"capguard-??????.jsonl", "capguard-learn-??????.jsonl",
                                      "capguard-check-??????.jsonl"};
  glob_t g = {0};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    char pattern[PATH_MAX];
    if ((size_t)snprintf(pattern, sizeof pattern, "%s/%s", dir, forms[i]) < sizeof pattern)
      glob(pattern, i ? GLOB_APPEND : 0, NULL, &g);
  }
  temp_log *logs = g.gl_pathc ? calloc(g.gl_pathc, sizeof *logs) : NULL;
  size_t n = 0;
  for (size_t i = 0; logs && i < g.gl_pathc; i++) {
    struct stat st;
    if (strcmp(g.gl_pathv[i], made) && lstat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == geteuid())
      logs[n++] = (temp_log){g.gl_pathv[i], st.st_mtime};
  }
  if (n > KEEP_TEMP_LOGS) {
    qsort(logs, n, sizeof *logs, newest_first);
    for (size_t i = KEEP_TEMP_LOGS; i < n; i++)
      if (time(NULL) - logs[i].mtime > 3600)
        unlink(logs[i].path);
  }
  free(logs);
  globfree(&g);
}

int cg_temp_log(const char *prefix, char *buf, size_t cap) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir)
    dir = "/tmp";
  if ((size_t)snprintf(buf, cap, "%s/%s-XXXXXX.jsonl", dir, prefix) >= cap) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = mkstemps(buf, 6);
  if (fd < 0)
    return -1;
  close(fd);
  prune_temp_logs(dir, buf); /* the one just made is not among those kept before */
  return 0;
}

int cg_log_pattern_glob(const char *log, glob_t *g) {
  char pattern[PATH_MAX];
  if (cg_log_name_glob(log, pattern, sizeof pattern) != 0)
    return GLOB_NOMATCH;
  return glob(pattern, 0, NULL, g);
}
