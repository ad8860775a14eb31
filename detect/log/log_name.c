/* Expanding log names (capguard/log_name.h): one scanner, used by the shim
 * to open its log and by the command to find the files again. */
#include "capguard/log_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { PIECE_TEXT, PIECE_PID, PIECE_HOST, PIECE_VAR, PIECE_PERCENT, PIECE_BAD } piece_kind;

typedef struct {
  piece_kind kind;
  const char *at; /* PIECE_TEXT: the character; PIECE_VAR: the name */
  size_t len;     /* PIECE_VAR: the name's length */
  size_t step;    /* characters of the log name it takes */
} piece;

/* The piece that starts at p. */
static piece next_piece(const char *p) {
  if (p[0] != '%')
    return (piece){PIECE_TEXT, p, 1, 1};
  switch (p[1]) {
  case 'p': return (piece){PIECE_PID, p, 0, 2};
  case 'h': return (piece){PIECE_HOST, p, 0, 2};
  case '%': return (piece){PIECE_PERCENT, p, 0, 2};
  case 'q': {
    const char *close = p[2] == '{' ? strchr(p + 3, '}') : NULL;
    if (!close || close == p + 3)
      return (piece){PIECE_BAD, p, 0, 0};
    for (const char *c = p + 3; c < close; c++)
      if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
            (c > p + 3 && *c >= '0' && *c <= '9')))
        return (piece){PIECE_BAD, p, 0, 0};
    return (piece){PIECE_VAR, p + 3, (size_t)(close - p - 3), (size_t)(close - p + 1)};
  }
  default: return (piece){PIECE_BAD, p, 0, 0};
  }
}

int cg_log_name_check(const char *name, char *why, size_t cap) {
  for (const char *p = name; *p;) {
    piece k = next_piece(p);
    if (k.kind == PIECE_BAD) {
      if (p[1] == 'q')
        snprintf(why, cap, "has '%%q' without a variable name in braces (write %%q{RANK})");
      else if (!p[1])
        snprintf(why, cap, "ends in a lone '%%' (write %%%% for a '%%')");
      else
        snprintf(why, cap, "has '%%%c', which is not %%p (pid), %%h (host), %%q{VAR} or %%%% (a '%%')",
                 p[1]);
      return -1;
    }
    p += k.step;
  }
  return 0;
}

static bool has(const char *name, piece_kind a, piece_kind b) {
  for (const char *p = name; *p;) {
    piece k = next_piece(p);
    if (k.kind == PIECE_BAD)
      return false;
    if (k.kind == a || k.kind == b)
      return true;
    p += k.step;
  }
  return false;
}

bool cg_log_name_varies(const char *name) { return has(name, PIECE_PID, PIECE_VAR); }
bool cg_log_name_has_pid(const char *name) { return has(name, PIECE_PID, PIECE_PID); }

/* Appends s (n bytes) at *used; false when it does not fit. */
static bool put(char *out, size_t cap, size_t *used, const char *s, size_t n) {
  if (*used + n >= cap)
    return false;
  memcpy(out + *used, s, n);
  *used += n;
  out[*used] = '\0';
  return true;
}

static bool put_host(char *out, size_t cap, size_t *used) {
  char host[256];
  if (gethostname(host, sizeof host) != 0)
    return false;
  host[sizeof host - 1] = '\0';
  return put(out, cap, used, host, strlen(host));
}

/* What an expansion must not be: nothing (the log would be a hidden
 * DIR/.jsonl, shared by every process whose RANK is unset), or a path of its
 * own ('/' or '..': RANK=../escape writes outside DIR). NULL when fine. */
static const char *bad_value(const char *v) {
  if (!*v)
    return "nothing";
  if (strchr(v, '/') || strstr(v, ".."))
    return "a path";
  return NULL;
}

int cg_log_name_refusal(const char *name, bool set_only, char *why, size_t cap) {
  for (const char *p = name; *p;) {
    piece k = next_piece(p);
    if (k.kind == PIECE_BAD)
      return 0;
    if (k.kind == PIECE_VAR && k.len < 256) {
      char var[256];
      memcpy(var, k.at, k.len);
      var[k.len] = '\0';
      const char *v = getenv(var);
      if (!v && !set_only) {
        snprintf(why, cap, "expands %%q{%s} to nothing (%s is unset)", var, var);
        return -1;
      }
      /* set empty where run runs: asked for (a launcher's workers set their own) */
      const char *bad = v && (*v || !set_only) ? bad_value(v) : NULL;
      if (bad && !*v) {
        snprintf(why, cap, "expands %%q{%s} to nothing (%s is empty)", var, var);
        return -1;
      }
      if (bad) {
        snprintf(why, cap, "expands %%q{%s} to '%.80s', which holds '/' or '..'", var, v);
        return -1;
      }
    }
    if (k.kind == PIECE_HOST) {
      char host[256];
      if (gethostname(host, sizeof host) == 0 && (host[sizeof host - 1] = '\0', bad_value(host))) {
        snprintf(why, cap, "expands %%h to '%.80s', which is empty or holds '/' or '..'", host);
        return -1;
      }
    }
    p += k.step;
  }
  return 0;
}

int cg_log_name_expand(const char *name, char *out, size_t cap) {
  size_t used = 0;
  if (!cap)
    return -1;
  char why[8];
  if (cg_log_name_refusal(name, false, why, sizeof why) != 0)
    return -2;
  out[0] = '\0';
  for (const char *p = name; *p;) {
    piece k = next_piece(p);
    bool fits = true;
    switch (k.kind) {
    case PIECE_TEXT: fits = put(out, cap, &used, p, 1); break;
    case PIECE_PERCENT: fits = put(out, cap, &used, "%", 1); break;
    case PIECE_PID: {
      char pid[24];
      int n = snprintf(pid, sizeof pid, "%d", (int)getpid());
      fits = put(out, cap, &used, pid, (size_t)n);
      break;
    }
    case PIECE_HOST: fits = put_host(out, cap, &used); break;
    case PIECE_VAR: {
      char var[256];
      if (k.len >= sizeof var)
        return -1;
      memcpy(var, k.at, k.len);
      var[k.len] = '\0';
      const char *v = getenv(var);
      fits = !v || put(out, cap, &used, v, strlen(v));
      break;
    }
    case PIECE_BAD: return -1;
    }
    if (!fits)
      return -1;
    p += k.step;
  }
  return 0;
}

int cg_log_name_glob(const char *name, char *out, size_t cap) {
  size_t used = 0;
  if (!cap)
    return -1;
  out[0] = '\0';
  for (const char *p = name; *p;) {
    piece k = next_piece(p);
    bool fits = true;
    switch (k.kind) {
    case PIECE_TEXT:
      if (strchr("*?[\\", *p))
        fits = put(out, cap, &used, "\\", 1);
      fits = fits && put(out, cap, &used, p, 1);
      break;
    case PIECE_PERCENT: fits = put(out, cap, &used, "%", 1); break;
    case PIECE_PID:
    case PIECE_VAR: fits = put(out, cap, &used, "*", 1); break;
    case PIECE_HOST: {
      char host[512] = "";
      size_t n = 0;
      if (!put_host(host, sizeof host, &n))
        return -1;
      for (const char *h = host; *h && fits; h++)
        fits = (!strchr("*?[\\", *h) || put(out, cap, &used, "\\", 1)) && put(out, cap, &used, h, 1);
      break;
    }
    case PIECE_BAD: return -1;
    }
    if (!fits)
      return -1;
    p += k.step;
  }
  return 0;
}
