#include "prime_precheck.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capguard/prime_file.h"
#include "rerun_command.h"

typedef struct {
  char first[512];
  size_t n;
} warnings;

static void collect(void *ctx, const char *line) {
  warnings *w = ctx;
  if (w->n++ == 0)
    snprintf(w->first, sizeof w->first, "%s", line);
}

cg_precheck cg_prime_precheck(const char *path, char *why, size_t cap, size_t *damaged) {
  why[0] = '\0';
  if (damaged)
    *damaged = 0;
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT) {
      snprintf(why, cap, "does not exist");
      return CG_PRECHECK_MISSING;
    }
    snprintf(why, cap, "cannot be read (%s)", strerror(errno));
    return CG_PRECHECK_BAD;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(why, cap, "is a directory: pass a file for --prime");
    return CG_PRECHECK_BAD;
  }
  /* The shim's cap: a file past it is not read (shim/decide/priming/priming.c). */
  uint64_t max = CG_PRIME_DEFAULT_MAX_BYTES;
  const char *s = getenv("CAPGUARD_PRIME_MAX");
  if (s && *s && cg_prime_parse_size(s, &max) != 0)
    max = CG_PRIME_DEFAULT_MAX_BYTES;
  if ((uint64_t)st.st_size > max) {
    char word[4200] = "";
    size_t used = 0;
    cgr_shell_word(path, word, sizeof word, &used);
    snprintf(why, cap,
             "is %llu bytes, over CAPGUARD_PRIME_MAX (%llu): the shim would not read it; prune it "
             "(%s prime prune --max-size %lluM %s) or raise CAPGUARD_PRIME_MAX",
             (unsigned long long)st.st_size, (unsigned long long)max, cgr_self_word(),
             (unsigned long long)(max >> 20 ? max >> 20 : 1), word);
    return CG_PRECHECK_BAD;
  }
  warnings w = {{0}, 0};
  cg_prime_set *set = NULL;
  int rc = cg_prime_load(path, &set, collect, &w);
  cg_prime_free(set);
  if (rc != 0) {
    /* the reader's own words, without its "capguard: priming file PATH: " and its advice */
    const char *reason = w.n ? w.first : strerror(errno);
    const char *after = strstr(reason, path);
    if (after && after[strlen(path)] == ':' && after[strlen(path) + 1] == ' ')
      reason = after + strlen(path) + 2;
    int len = (int)strcspn(reason, ";\n");
    /* not trusted (owner, mode) or not readable: the reader's own fix, chown or chmod */
    const char *fix = strstr(reason, "; not used: run '");
    if (fix)
      snprintf(why, cap, "cannot be used (%.*s): %s", len, reason, fix + strlen("; not used: "));
    else
      snprintf(why, cap, "is not a priming file the shim can read (%.*s): move it away, or pass "
                         "another --prime",
               len, reason);
    return CG_PRECHECK_BAD;
  }
  if (damaged)
    *damaged = w.n;
  return CG_PRECHECK_OK;
}
