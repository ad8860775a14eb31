#include "env_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* environ */

#include "capguard/env_value.h"
#include "capguard/log_name.h"
#include "capguard/log_schema.h"
#include "capguard/prime_file.h"
#include "cli.h"

static int check_mode(const char *v, char *why, size_t cap) {
  if (cg_run_mode_parse(v, &(cg_run_mode){0}))
    return 0;
  char modes[128];
  cg_word_list(&cg_run_modes, modes, sizeof modes);
  snprintf(why, cap, "is not a mode: %s", modes);
  return -1;
}

static int check_driver(const char *v, char *why, size_t cap) {
  if (cg_parse_driver_version(v, &(int){0}) == 0)
    return 0;
  snprintf(why, cap, "is not a driver version like 12020 (12.2)");
  return -1;
}

static int check_bool(const char *v, char *why, size_t cap) {
  if (cg_parse_bool(v, &(bool){0}) == 0)
    return 0;
  snprintf(why, cap, "is not 1 or 0 (yes/no, true/false, on/off)");
  return -1;
}

static int check_size(const char *v, char *why, size_t cap) {
  uint64_t n;
  if (cg_prime_parse_size(v, &n) == 0)
    return 0;
  snprintf(why, cap, "is not a size like 256M");
  return -1;
}

static int check_log(const char *v, char *why, size_t cap) {
  char what[256];
  if (cg_log_name_check(v, what, sizeof what) == 0)
    return 0;
  snprintf(why, cap, "is not a log name: it %s", what);
  return -1;
}

static int check_hang(const char *v, char *why, size_t cap) {
  if (cg_parse_hang_seconds(v, &(unsigned){0}) == 0)
    return 0;
  snprintf(why, cap, "is not a number of seconds from 1 to 86400");
  return -1;
}

/* The variables the shim reads (shim/base/config.c; the hang watch's in
 * shim/decide/hang/hang_watch.c), and what it takes of each. */
const cg_env_var cg_env_vars[] = {
    {"CAPGUARD_MODE", check_mode},
    {"CAPGUARD_LOG", check_log},
    {"CAPGUARD_PRIME", NULL},
    {"CAPGUARD_PRIME_MAX", check_size},
    {"CAPGUARD_EMULATE_DRIVER", check_driver},
    {"CAPGUARD_RESCUE", check_bool},
    {"CAPGUARD_PRIME_READONLY", check_bool},
    {"CAPGUARD_QUIET", check_bool},
    {"CAPGUARD_SUMMARY", check_bool},
    {"CAPGUARD_RUN", NULL},
    {"CAPGUARD_METRICS", NULL}, /* a directory, made or said when first written */
    {"CAPGUARD_STALE", check_bool},
    {"CAPGUARD_HANG_S", check_hang},
    {"CAPGUARD_SERVING_AFTER", check_hang}, /* whole seconds, as CAPGUARD_HANG_S */
    /* set by capguard run for its processes: how the priming file was named,
     * and that run said already why it cannot be used */
    {"CAPGUARD_PRIME_OPTION", NULL},
    {"CAPGUARD_PRIME_SAID", NULL},
    /* set by capguard run: the file for the records of a process whose log
     * name is refused or whose log cannot be opened */
    {"CAPGUARD_LOG_FALLBACK", NULL},
};
const size_t cg_env_n_vars = sizeof cg_env_vars / sizeof cg_env_vars[0];

/* The command's own (tools/), and the notes the shim and capguard run leave
 * for their processes: known names, never a misspelling. */
static const char *const command_vars[] = {
    "CAPGUARD_SHIM",     "CAPGUARD_LIBCUDA",        "CAPGUARD_LAUNCHER",       "CAPGUARD_LAUNCHER_ON_PATH",
    "CAPGUARD_VERDICT_FOLLOWS", "CAPGUARD_CONFIG_WARNED", "CAPGUARD_LOG_WARNED",
};
#define N_COMMAND_VARS (sizeof command_vars / sizeof command_vars[0])

static const char *known_name(size_t i) {
  return i < cg_env_n_vars ? cg_env_vars[i].name : command_vars[i - cg_env_n_vars];
}

static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb) {
  size_t row[64];
  if (nb >= sizeof row / sizeof row[0])
    return (size_t)-1;
  for (size_t j = 0; j <= nb; j++)
    row[j] = j;
  for (size_t i = 1; i <= na; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[nb];
}

/* The known name nearest to name (n bytes): one that holds it, or that it
 * holds (CAPGUARD_EMULATE, CAPGUARD_READONLY), else the fewest edits. */
static const char *nearest(const char *name, size_t n) {
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  const size_t skip = strlen("CAPGUARD_");
  for (size_t i = 0; i < cg_env_n_vars + N_COMMAND_VARS; i++) {
    const char *k = known_name(i);
    size_t d = edit_distance(name, n, k, strlen(k));
    char part[64];
    snprintf(part, sizeof part, "%.*s", (int)(n - skip), name + skip);
    if (n > skip + 2 && (strstr(k + skip, part) || (strlen(k) > skip + 2 && strstr(part, k + skip))))
      d = 0;
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best_d <= n / 2 ? best : NULL;
}

int cg_env_unknown(size_t *at, char *line, size_t cap) {
  for (; environ[*at]; (*at)++) {
    const char *e = environ[*at];
    size_t n = strcspn(e, "=");
    if (strncmp(e, "CAPGUARD_", strlen("CAPGUARD_")) || !e[n])
      continue;
    bool known = false;
    for (size_t i = 0; i < cg_env_n_vars + N_COMMAND_VARS && !known; i++)
      known = strlen(known_name(i)) == n && !strncmp(known_name(i), e, n);
    if (known)
      continue;
    char raw[256], shown[256];
    snprintf(raw, sizeof raw, "%.*s", (int)n, e);
    cg_printable(raw, shown, sizeof shown);
    const char *near = nearest(e, n);
    snprintf(line, cap, "%s is not a capguard variable%s%s%s", shown, near ? " (did you mean " : "",
             near ? near : "", near ? "?)" : "");
    (*at)++;
    return 0;
  }
  return -1;
}

int cg_env_bad(const cg_env_var *row, char *line, size_t cap) {
  const char *v = getenv(row->name);
  char why[256];
  /* an empty value is the default for every variable, as in the shim */
  if (!v || !*v || !row->check || row->check(v, why, sizeof why) == 0)
    return 0;
  char shown[256];
  snprintf(line, cap, "%s=%s %s", row->name, cg_printable(v, shown, sizeof shown), why);
  return -1;
}

bool cg_env_true(const char *name) {
  const char *v = getenv(name);
  bool on = false;
  return v && cg_parse_bool(v, &on) == 0 && on;
}
