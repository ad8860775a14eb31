#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "capguard/env_value.h"
#include "capguard/image.h"
#include "capguard/prime_file.h"
#include "absolute_path.h"
#include "warn.h"

cg_config cg_cfg;

/* Configuration warnings are said once per process tree: a shell script of
 * five commands under capguard would otherwise repeat each one five times.
 * They are collected while the settings are read; the first process to say
 * them leaves CONFIG_MARK in its environment, holding a hash of what it said,
 * and a child that would say exactly the same stays quiet (a child with other
 * settings, hence other warnings, speaks). setenv runs in the constructor,
 * before the program's own threads exist, and only when there was a warning. */
#define CONFIG_MARK "CAPGUARD_CONFIG_WARNED"
#define MAX_NOTES 8
static char notes[MAX_NOTES][512];
static int n_notes;

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...) {
  if (n_notes == MAX_NOTES)
    return;
  va_list ap;
  va_start(ap, fmt);
  memset(notes[n_notes], 0, sizeof notes[0]); /* hashed whole (say_notes) */
  vsnprintf(notes[n_notes++], sizeof notes[0], fmt, ap);
  va_end(ap);
}

static void say_notes(void) {
  if (!n_notes)
    return;
  char mark[33];
  cg_hash_format(cg_hash_bytes(notes, sizeof notes[0] * (size_t)n_notes), mark);
  const char *seen = getenv(CONFIG_MARK);
  if (seen && strcmp(seen, mark) == 0)
    return;
  for (int i = 0; i < n_notes; i++)
    cg_warn("%s", notes[i]);
  setenv(CONFIG_MARK, mark, 1);
}

/* Secure execution (AT_SECURE: set-user-ID, set-group-ID, file
 * capabilities): the environment is the invoking user's, and capguard runs
 * with the program's privileges. As glibc's secure_getenv rules, nothing is
 * taken from it: no path (a log appended to as root, a priming file made as
 * root), no mode, no value of the program's choosing; every setting keeps
 * its default, and with no log, priming file or metrics directory capguard
 * writes no file. It watches and counts, on stderr (init.c says so once). */
/* The environment, indexed in one pass at the start of cg_config_load by
 * each variable's first letter: a getenv per setting walked the whole
 * environment each time (18 settings, then HOME, XDG_CACHE_HOME and the
 * launchers' rank variables: about 85 instructions a variable of every
 * process's start-up, +17k with 200 variables). Now a variable costs a
 * look at its first byte (one starting with C, at the prefix too: about 22
 * instructions a variable in all), and a lookup walks only the variables that start
 * with its name's letter, in the environment's order (the first match, as
 * getenv's); CAPGUARD_* is a letter of its own, since other variables
 * start with C. Only names starting A-Z are asked for, so a variable
 * starting otherwise can never match and is not indexed. Only used while the
 * settings are read, in the constructor, before the program's threads
 * exist; the values point into environ, as getenv's do. An environment
 * larger than the index falls back to getenv. */
#define ENV_INDEXED 4096
#define ENV_LETTERS 26
#define ENV_OURS ENV_LETTERS /* the bucket of CAPGUARD_*: a letter of its own */
#define ENV_BUCKETS (ENV_LETTERS + 1)
#define ENV_PREFIX "CAPGUARD" "_" /* two pieces: no setting of that name (cli-env-agree lists them) */
#define ENV_PREFIX_LEN (sizeof ENV_PREFIX - 1)
static char **env_list;                /* environ when indexed */
static uint16_t env_next[ENV_INDEXED]; /* 1 + the next variable of the same letter; 0: none */
static uint16_t env_first[ENV_BUCKETS], env_last[ENV_BUCKETS]; /* 1 + index; 0: none */
static bool env_unindexed;                                     /* too many variables: getenv for every one */

/* The variable's bucket, or ENV_BUCKETS when no name asked for starts as it does. */
static unsigned bucket_of(const char *s) {
  unsigned l = (unsigned char)s[0] - 'A';
  if (l == 'C' - 'A') {
    size_t i = 1;
    while (i < ENV_PREFIX_LEN && s[i] == ENV_PREFIX[i])
      i++;
    if (i == ENV_PREFIX_LEN)
      return ENV_OURS;
  }
  return l < ENV_LETTERS ? l : ENV_BUCKETS;
}

static void index_env(void) {
  extern char **environ;
  env_list = environ;
  env_unindexed = false;
  for (int l = 0; l < ENV_BUCKETS; l++)
    env_first[l] = env_last[l] = 0;
  for (size_t i = 0; env_list && env_list[i]; i++) {
    unsigned l = bucket_of(env_list[i]);
    if (l == ENV_BUCKETS)
      continue;
    if (i >= ENV_INDEXED) {
      env_unindexed = true;
      return;
    }
    env_next[i] = 0;
    if (env_last[l])
      env_next[env_last[l] - 1] = (uint16_t)(i + 1);
    else
      env_first[l] = (uint16_t)(i + 1);
    env_last[l] = (uint16_t)(i + 1);
  }
}

/* By hand, not strncmp: the constructor's first call of each glibc
 * function is bound then, about 800 instructions each. */
static const char *value_of(const char *entry, const char *name) {
  size_t i = 0;
  while (name[i] && entry[i] == name[i])
    i++;
  return !name[i] && entry[i] == '=' ? entry + i + 1 : NULL;
}

/* name's value, looked for in its bucket l. */
static const char *lookup(unsigned l, const char *name) {
  if (cg_cfg.secure)
    return NULL;
  if (env_unindexed || l == ENV_BUCKETS)
    return getenv(name);
  size_t known = l == ENV_OURS ? ENV_PREFIX_LEN : 0; /* the bucket's entries all start so */
  for (unsigned at = env_first[l]; at; at = env_next[at - 1]) {
    const char *v = value_of(env_list[at - 1] + known, name + known);
    if (v)
      return v;
  }
  return NULL;
}

static const char *env(const char *name) { return lookup(bucket_of(name), name); }

/* A setting's value: its name starts CAPGUARD_, so its bucket is known
 * (bucket_of compares that prefix a byte at a time: about 45 instructions
 * a setting, 800 of every start-up). */
static const char *setting(const char *name) { return lookup(ENV_OURS, name); }

static void load_bool(const char *var, bool *out, bool dflt) {
  const char *s = setting(var);
  *out = dflt;
  if (s && *s && cg_parse_bool(s, out)) {
    note("%s=%s is not understood (use 1 or 0); treating it as %d", var, s, (int)dflt);
    *out = dflt;
  }
}

void cg_config_load(void) {
  const char *s;
  n_notes = 0;
  cg_cfg.secure = getauxval(AT_SECURE) != 0;
  index_env();
  cg_cfg.mode = CG_RUN_GUARD;
  if ((s = setting("CAPGUARD_MODE")) && *s && !cg_run_mode_parse(s, &cg_cfg.mode)) {
    /* A typo ("gaurd") keeps the default: falling back to report would turn
     * protection off, silently, run after run. */
    note("CAPGUARD_MODE=%s is not a mode (guard, report, off); using guard, the default", s);
    cg_cfg.mode = CG_RUN_GUARD;
  }
  s = setting("CAPGUARD_LOG");
  cg_cfg.log_path = (s && *s) ? s : NULL;
  s = setting("CAPGUARD_LOG_FALLBACK"); /* set by capguard run: where a log it cannot place goes */
  cg_cfg.log_fallback = (s && *s) ? s : NULL;

  cg_cfg.prime_max = CG_PRIME_DEFAULT_MAX_BYTES;
  if ((s = setting("CAPGUARD_PRIME_MAX")) && *s && cg_prime_parse_size(s, &cg_cfg.prime_max)) {
    note("CAPGUARD_PRIME_MAX=%s is not a size (e.g. 256M); using %llu MiB", s,
            (unsigned long long)(CG_PRIME_DEFAULT_MAX_BYTES >> 20));
    cg_cfg.prime_max = CG_PRIME_DEFAULT_MAX_BYTES;
  }
  /* CAPGUARD_PRIME, else the XDG cache, else ~/.cache: read here, like every variable */
  const char *prime = setting("CAPGUARD_PRIME");
  if (cg_cfg.secure) {
    cg_cfg.prime_path[0] = 0; /* not even the default: it is found through HOME */
  } else if (prime && strlen(prime) >= sizeof cg_cfg.prime_path) {
    cg_cfg.prime_path[0] = 0;
    if (cg_cfg.mode == CG_RUN_GUARD)
      note("priming is off: CAPGUARD_PRIME is %zu bytes long, longer than a path may be (%zu); "
           "set it to a shorter path", strlen(prime), sizeof cg_cfg.prime_path - 1);
  } else if (cg_prime_default_path(prime, env("XDG_CACHE_HOME"), env("HOME"), cg_cfg.prime_path,
                                   sizeof cg_cfg.prime_path)) {
    cg_cfg.prime_path[0] = 0;
    if (cg_cfg.mode == CG_RUN_GUARD)
      note("priming is off: CAPGUARD_PRIME is not set and neither XDG_CACHE_HOME nor HOME says where "
           "the cache is (or the path is too long); set CAPGUARD_PRIME=FILE to record and replay");
  }

  /* A relative path is resolved now, against the working directory at
   * start, where the log is opened too: a program that chdir()s later still
   * reads and records the file it was given. */
  if (cg_cfg.prime_path[0] && cg_cfg.prime_path[0] != '/' && cg_path_absolute(cg_cfg.prime_path, sizeof cg_cfg.prime_path)) {
    note("priming is off: CAPGUARD_PRIME=%s is relative and the working directory cannot be read (or the "
         "whole path is too long); set it to an absolute path", cg_cfg.prime_path);
    cg_cfg.prime_path[0] = 0;
  }

  cg_cfg.emulate_driver = 0;
  if ((s = setting("CAPGUARD_EMULATE_DRIVER")) && *s && cg_parse_driver_version(s, &cg_cfg.emulate_driver)) {
    note("CAPGUARD_EMULATE_DRIVER=%s is not a driver version like 12020; not emulating", s);
    cg_cfg.emulate_driver = 0;
  }
  load_bool("CAPGUARD_RESCUE", &cg_cfg.rescue, false);
  load_bool("CAPGUARD_PRIME_READONLY", &cg_cfg.prime_readonly, false);
  load_bool("CAPGUARD_QUIET", &cg_cfg.quiet, false);
  load_bool("CAPGUARD_SUMMARY", &cg_cfg.summary, true);
  load_bool("CAPGUARD_STALE", &cg_cfg.stale, false);
  s = setting("CAPGUARD_RUN");
  cg_cfg.run_id = (s && *s) ? s : NULL;
  s = setting("CAPGUARD_METRICS");
  cg_cfg.metrics_dir = (s && *s) ? s : NULL;
  char rank_why[160];
  cg_cfg.rank = cg_rank_from_env(env, rank_why, sizeof rank_why);
  if (rank_why[0])
    note("%s; %s", rank_why,
         cg_cfg.rank.rank >= 0 ? "using the next launcher's rank" : "this process's rank is unknown");
  cg_cfg.hang_s = setting("CAPGUARD_HANG_S");
  cg_cfg.serving_after = setting("CAPGUARD_SERVING_AFTER");
  s = setting("CAPGUARD_PRIME_OPTION");
  cg_cfg.prime_option = s && !strcmp(s, "--prime");
  s = setting("CAPGUARD_PRIME_SAID");
  cg_cfg.prime_said = s && !strcmp(s, "1");
  say_notes();
}
