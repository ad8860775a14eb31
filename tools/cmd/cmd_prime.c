/* `capguard prime list|show|verify|prune|merge|rm`: the user's view of the
 * priming file (docs/priming-format.md). All file work goes through
 * capguard/prime_file.h, so the CLI gets the same locking and safety checks
 * as the shim. */
#include "commands.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capguard/load_options.h"
#include "capguard/prime_file.h"
#include "cli.h"
#include "cmd_prime_learn.h"
#include "cmd_prime_oci.h"
#include "kernel_display.h"
#include "plural.h"

/* Progress is shown for verify when stderr is a terminal and the file is at
 * least this big; smaller files are checked faster than a line could be read. */
#define PROGRESS_MIN_BYTES ((uint64_t)16 << 20)

static const char usage_text[] =
    "usage: capguard prime <command> [arguments]\n"
    "\n"
    "Inspect and maintain the priming file: module images that were needed while\n"
    "a CUDA graph was being captured, preloaded by capguard on the next run.\n"
    "\n"
    "  list [FILE]                   one line per image: hash, kind, arch, size,\n"
    "                                copies, hits, last needed (UTC date), kernel\n"
    "                                names; copies: how many of it the next run\n"
    "                                preloads (the most one process had loaded at\n"
    "                                once); hits: how often processes needed it\n"
    "                                during capture, over every run\n"
    "  show HASH-PREFIX [FILE]       every field of one image\n"
    "  verify [FILE]                 check every record's checksum\n"
    "  prune [--older-than DAYS] [--max-size SIZE] [--dry-run] [FILE]\n"
    "                                drop images not needed for DAYS days, then the\n"
    "                                least recently needed until the file fits SIZE\n"
    "                                (e.g. 64M); also drops damaged records;\n"
    "                                --dry-run says what it would drop\n"
    "  info [FILE]                   what the file is for: its identity (program, driver,\n"
    "                                GPU, label, format) and its images' architectures\n"
    "  export --oci DIR [FILE]       write FILE as an OCI image layout (skopeo copies it)\n"
    "  import --oci DIR [--prime FILE]  check the layout's digests and write its file\n"
    "  merge OUT IN...               add the images of every IN to OUT (created if\n"
    "                                missing), once each; an image's hit count is\n"
    "                                the largest any file holds (merging again\n"
    "                                changes nothing)\n"
    "  rm HASH-PREFIX... [FILE]      remove images; the last argument is FILE\n"
    "                                unless it is all hex digits (write ./NAME)\n"
    "  learn [--prime FILE] [--log FILE] -- CMD [ARGS...]\n"
    "                                run CMD once in guard mode and record every\n"
    "                                load during capture, with how many times one\n"
    "                                process needed it; use a driver 12.3 or newer\n"
    "  check [--prime FILE] [--log FILE] -- CMD [ARGS...]\n"
    "                                run CMD with FILE as a driver before 12.3\n"
    "                                would (emulated), FILE left unchanged; exit 0\n"
    "                                only if no load reached the driver during\n"
    "                                capture, else name what is missing\n"
    "\n"
    "FILE defaults to $CAPGUARD_PRIME, else $XDG_CACHE_HOME/capguard/prime.cgp,\n"
    "else ~/.cache/capguard/prime.cgp.\n"
    "Exit status: 0 ok; 1 damage found (list, show, merge still do what they\n"
    "can) or a file or record could not be used; 2 usage error.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cg_error_v("capguard prime", "; run 'capguard prime --help' for usage\n", fmt, ap);
  va_end(ap);
  return CG_EXIT_USAGE;
}

/* fmt already says what to do. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cg_error_v("capguard prime", "\n", fmt, ap);
  va_end(ap);
  return CG_EXIT_FINDING;
}

/* ctx, when not NULL, counts the lines: damage seen while loading. */
static void warn_line(void *ctx, const char *line) {
  if (ctx) ++*(int *)ctx;
  fprintf(stderr, "%s\n", line);
}

/* ---- formatting ---- */

static void format_time(uint64_t ns, bool with_time, char *out, size_t cap) {
  time_t t = (time_t)(ns / 1000000000u);
  struct tm tm;
  if (ns == 0 || !gmtime_r(&t, &tm)) {
    snprintf(out, cap, "-");
    return;
  }
  strftime(out, cap, with_time ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d", &tm);
}

static void format_arch(unsigned arch, char *out, size_t cap) {
  if (arch) snprintf(out, cap, "sm_%u", arch);
  else snprintf(out, cap, "-");
}

/* ---- arguments ---- */

static bool is_hex_prefix(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 32) return false;
  for (; *s; s++)
    if (!isxdigit((unsigned char)*s)) return false;
  return true;
}

/* For commands that take no options: "-x" is a mistake, not a file name. */
static int reject_options(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (argv[i][0] == '-' && argv[i][1])
      return usage_error("unknown option '%s' for %s", argv[i], argv[0]);
  return 0;
}

/* Resolve FILE or the default; 0, or an exit status. */
static int pick_file(const char *given, char *buf, size_t cap) {
  if (given) {
    if (snprintf(buf, cap, "%s", given) >= (int)cap) return usage_error("file name too long");
    return 0;
  }
  if (cg_cli_prime_default(buf, cap) != 0)
    return fail("cannot tell where the priming file is (CAPGUARD_PRIME, XDG_CACHE_HOME and HOME "
                "are unset); name the file or set CAPGUARD_PRIME");
  return 0;
}

/* Loads path; *damage counts damaged records reported (each a warning). */
static int load(const char *path, cg_prime_set **s, int *damage) {
  if (cg_prime_load(path, s, warn_line, damage) != 0)
    return fail("cannot use %s (see above); fix or move the file and try again", path);
  return 0;
}

static bool file_exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* Index of the one record whose hash starts with prefix; -1 none, -2 several. */
static long match_prefix(const cg_prime_set *s, const char *prefix) {
  long found = -1;
  size_t n = strlen(prefix);
  for (size_t i = 0; i < cg_prime_count(s); i++) {
    char hex[33];
    cg_hash_format(cg_prime_get(s, i)->hash, hex);
    if (strncasecmp(hex, prefix, n) != 0) continue;
    if (found >= 0) return -2;
    found = (long)i;
  }
  return found;
}

static int prefix_problem(long m, const char *prefix, const char *path) {
  if (m == -1)
    return fail("no image in %s has a hash starting with '%s'; run 'capguard prime list %s'",
                path, prefix, path);
  return fail("several images in %s have hashes starting with '%s'; give more digits", path,
              prefix);
}

/* ---- list, show ---- */

/* Each kernel's display form (kernel_display.h); with_symbol: the exact
 * symbol after it too, where they differ (show, one kernel a line), else a
 * template's instances, which read alike, named once (list). */
static void print_names(const cg_prime_record *r, const char *sep, bool with_symbol) {
  if (r->n_kernels == 0) {
    fputs("-", stdout);
    return;
  }
  char disp[CG_KERNEL_DISPLAY_MAX], prev[CG_KERNEL_DISPLAY_MAX] = "";
  const char *n = r->kernel_names, *end = r->kernel_names + r->names_len;
  size_t said = 0;
  for (uint32_t k = 0; k < r->n_kernels && n < end; k++, n += strlen(n) + 1) {
    if (with_symbol)
      cg_kernel_display(n, disp, sizeof disp);
    else if (!cg_kernel_display_new(n, disp, prev))
      continue;
    fputs(said++ ? sep : "", stdout);
    fputs(disp, stdout);
    if (with_symbol && strcmp(disp, n))
      printf("  %s", n);
  }
}

/* The copies the next run preloads: the most one process had loaded at once
 * during capture (a file without loads records means one module). */
static unsigned copies_of(const cg_prime_record *r) {
  uint64_t n = (uint64_t)r->module_loads + r->library_loads;
  return n == 0 ? 1u : n > UINT32_MAX ? UINT32_MAX : (unsigned)n;
}

/* The files capguard run keeps, one a program, when no --prime is given
 * (cg_cli_prime_for): DIR/prime.d/ beside the shared default. */
static void program_files(const char *shared, glob_t *g) {
  char pattern[PATH_MAX];
  const char *slash = strrchr(shared, '/');
  memset(g, 0, sizeof *g);
  if (!slash || snprintf(pattern, sizeof pattern, "%.*s/prime.d/*.cgp", (int)(slash - shared),
                         shared) >= (int)sizeof pattern ||
      glob(pattern, 0, NULL, g) != 0)
    globfree(g), memset(g, 0, sizeof *g);
}

/* No FILE, no CAPGUARD_PRIME: the shared file may not be what capguard run
 * used. One program's file and no shared file: that one, said; several, or
 * both: which, said (for list, show and verify: cmd, "listing", and the
 * arguments before FILE). 0 to go on with path; else an exit status. */
static int pick_run_file(char *path, size_t cap, const char *cmd, const char *doing, const char *arg) {
  const char *named = getenv("CAPGUARD_PRIME");
  if (named && *named) return 0;
  glob_t g;
  program_files(path, &g);
  int rc = 0;
  if (g.gl_pathc == 1 && !file_exists(path)) {
    fprintf(stderr, "capguard prime: %s does not exist; %s %s, the file capguard run uses for "
                    "that program when no --prime is given\n", path, doing, g.gl_pathv[0]);
    snprintf(path, cap, "%s", g.gl_pathv[0]);
  } else if (g.gl_pathc) {
    char names[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < g.gl_pathc && used < sizeof names; i++) {
      const char *base = strrchr(g.gl_pathv[i], '/') + 1;
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", base);
    }
    const char *dir_end = strrchr(g.gl_pathv[0], '/');
    if (file_exists(path))
      fprintf(stderr, "capguard prime: %s %s, the shared file; capguard run without --prime "
                      "uses each program's own file in %.*s/ (%s): name one to %s it\n",
              doing, path, (int)(dir_end - g.gl_pathv[0]), g.gl_pathv[0], names, cmd);
    else {
      /* the example: the file written last, the one the latest run used */
      size_t latest = 0;
      struct timespec newest = {0, 0};
      for (size_t i = 0; i < g.gl_pathc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) == 0 &&
            (st.st_mtim.tv_sec > newest.tv_sec ||
             (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec > newest.tv_nsec))) {
          newest = st.st_mtim;
          latest = i;
        }
      }
      rc = fail("%s does not exist; capguard run without --prime uses each program's own file in "
                "%.*s/ (%s): name one, e.g. the one written last: capguard prime %s%s%s %s",
                path, (int)(dir_end - g.gl_pathv[0]), g.gl_pathv[0], names, cmd, arg ? " " : "", arg ? arg : "",
                g.gl_pathv[latest]);
    }
  }
  globfree(&g);
  return rc;
}

/* The options r's loads were made with, "NAME=VALUE,...", or "" for none. */
static void format_options(const cg_prime_record *r, char *buf, size_t cap) {
  cg_load_opts o;
  buf[0] = 0;
  if (r->n_options && cg_load_opts_decode(r->options, r->n_options, &o) == 0)
    cg_load_opts_format(&o, buf, cap);
}

static int cmd_list(int argc, char **argv) {
  if (reject_options(argc, argv)) return CG_EXIT_USAGE;
  if (argc > 2) return usage_error("list takes at most one FILE");
  char path[PATH_MAX];
  int rc = pick_file(argc == 2 ? argv[1] : NULL, path, sizeof path);
  if (rc) return rc;
  if (argc < 2 && (rc = pick_run_file(path, sizeof path, "list", "listing", NULL))) return rc;
  /* as verify: a file that is not there is named, not listed as empty */
  if (!file_exists(path))
    return fail("%s does not exist; check the name (capguard run prints the priming file it used)",
                path);
  cg_prime_set *s;
  int damage = 0;
  if ((rc = load(path, &s, &damage))) return rc;
  printf("%-12s  %-6s  %-6s  %10s  %6s  %6s  %-11s  %s\n", "hash", "kind", "arch", "bytes",
         "copies", "hits", "last needed", "kernels");
  for (size_t i = 0; i < cg_prime_count(s); i++) {
    const cg_prime_record *r = cg_prime_get(s, i);
    char hex[33], arch[16], when[32];
    cg_hash_format(r->hash, hex);
    format_arch(r->sm_arch, arch, sizeof arch);
    format_time(r->last_ns, false, when, sizeof when);
    printf("%.12s  %-6s  %-6s  %10llu  %6u  %6llu  %-11s  ", hex, cg_image_kind_name(r->kind), arch,
           (unsigned long long)r->size, copies_of(r), (unsigned long long)r->hits, when);
    print_names(r, ",", false);
    putchar('\n');
    char opts[512];
    format_options(r, opts, sizeof opts);
    if (opts[0]) /* the same bytes loaded with other options are another entry */
      printf("%14s options: %s\n", "", opts);
  }
  /* after the table: its first line stays the header that scripts read */
  cg_prime_print_identity(stdout, cg_prime_identity_of(s));
  cg_prime_free(s);
  return damage ? CG_EXIT_FINDING : CG_EXIT_OK;
}

static int cmd_show(int argc, char **argv) {
  if (reject_options(argc, argv)) return CG_EXIT_USAGE;
  if (argc < 2 || argc > 3) return usage_error("show takes HASH-PREFIX and at most one FILE");
  if (!is_hex_prefix(argv[1]))
    return usage_error("'%s' is not a hash prefix (1 to 32 hex digits)", argv[1]);
  char path[PATH_MAX];
  int rc = pick_file(argc == 3 ? argv[2] : NULL, path, sizeof path);
  if (rc) return rc;
  /* as list: capguard run's own file for a program, when no file is named */
  if (argc < 3 && (rc = pick_run_file(path, sizeof path, "show", "showing from", argv[1]))) return rc;
  cg_prime_set *s;
  int damage = 0;
  if ((rc = load(path, &s, &damage))) return rc;
  long m = match_prefix(s, argv[1]);
  if (m < 0) {
    cg_prime_free(s);
    return prefix_problem(m, argv[1], path);
  }
  const cg_prime_record *r = cg_prime_get(s, (size_t)m);
  char hex[33], arch[16], first[32], last[32];
  cg_hash_format(r->hash, hex);
  format_arch(r->sm_arch, arch, sizeof arch);
  format_time(r->first_ns, true, first, sizeof first);
  format_time(r->last_ns, true, last, sizeof last);
  char opts[512];
  format_options(r, opts, sizeof opts);
  printf("hash:         %s\nkind:         %s\narch:         %s\nsize:         %llu bytes\n"
         "on disk:      %llu bytes\nhits:         %llu\nfirst needed: %s\nlast needed:  %s\n"
         "copies:       %u module%s, %u librar%s (preloaded: the most alive at once during capture)\n"
         "options:      %s\n"
         "kernels:      %u\n",
         hex, cg_image_kind_name(r->kind), arch, (unsigned long long)r->size,
         (unsigned long long)cg_prime_record_disk_size(r), (unsigned long long)r->hits, first,
         last, r->module_loads, cg_plural(r->module_loads), r->library_loads,
         r->library_loads == 1 ? "y" : "ies", opts[0] ? opts : "none (loaded without options)", r->n_kernels);
  if (r->n_kernels) {
    fputs("  ", stdout);
    print_names(r, "\n  ", true);
    putchar('\n');
  }
  cg_prime_free(s);
  return damage ? CG_EXIT_FINDING : CG_EXIT_OK;
}

/* ---- verify ---- */

typedef struct {
  const char *path;
  size_t ok, bad, images;
  bool show_progress;
  int last_pct;
} verify_state;

static void verify_entry(void *ctx, const cg_prime_walk_entry *e) {
  verify_state *v = ctx;
  if (e->state == CG_PRIME_REC_OK) {
    v->ok++;
    v->images += e->type == CG_PRIME_REC_IMAGE;
    return;
  }
  v->bad++;
  if (v->show_progress) fputs("\r\033[K", stderr);
  printf("%s: offset %llu: %s, %llu bytes (%s)\n", v->path, (unsigned long long)e->offset,
         e->state == CG_PRIME_REC_TORN ? "incomplete last record" : "damaged record",
         (unsigned long long)e->length, e->why);
}

static void verify_progress(void *ctx, uint64_t done, uint64_t total) {
  verify_state *v = ctx;
  if (!v->show_progress || total == 0) return;
  int pct = (int)(done * 100 / total);
  if (pct == v->last_pct) return;
  v->last_pct = pct;
  fprintf(stderr, "\rcapguard prime verify: %d%%", pct);
}

static int cmd_verify(int argc, char **argv) {
  if (reject_options(argc, argv)) return CG_EXIT_USAGE;
  if (argc > 2) return usage_error("verify takes at most one FILE");
  char path[PATH_MAX];
  int rc = pick_file(argc == 2 ? argv[1] : NULL, path, sizeof path);
  if (rc) return rc;
  if (argc < 2 && (rc = pick_run_file(path, sizeof path, "verify", "verifying", NULL))) return rc;
  struct stat st;
  verify_state v = {.path = path, .last_pct = -1};
  v.show_progress = isatty(STDERR_FILENO) && stat(path, &st) == 0 &&
                    (uint64_t)st.st_size >= PROGRESS_MIN_BYTES;
  int r = cg_prime_verify(path, verify_entry, verify_progress, &v, warn_line, NULL);
  if (v.show_progress && v.last_pct >= 0) fputs("\r\033[K", stderr);
  if (r < 0) return fail("cannot verify %s; see the line above", path);
  /* records, not images: an image needed again gets a hit record of its own */
  printf("%s: %zu record%s intact (%zu image%s, %zu hit update%s), %zu damaged\n", path, v.ok,
         cg_plural(v.ok), v.images, cg_plural(v.images), v.ok - v.images, cg_plural(v.ok - v.images),
         v.bad);
  if (r > 0)
    fprintf(stderr, "capguard prime: %s is damaged; run 'capguard prime prune %s' to keep only "
                    "the intact records\n", path, path);
  return r > 0 ? CG_EXIT_FINDING : CG_EXIT_OK;
}

/* ---- prune ---- */

typedef struct {
  bool by_age, by_size;
  uint64_t cutoff_ns, max_size;
  size_t kept, dropped;
  uint64_t kept_bytes;
  /* what --max-size alone would do: images it drops that age keeps, and the
   * smallest image's size on disk */
  size_t dropped_by_size, images;
  uint64_t smallest;
  bool dry_run, refuse;
} prune_state;

static const cg_prime_set *sort_set; /* for qsort; the CLI is single-threaded */
static int by_last_needed(const void *a, const void *b) {
  uint64_t x = cg_prime_get(sort_set, *(const size_t *)a)->last_ns;
  uint64_t y = cg_prime_get(sort_set, *(const size_t *)b)->last_ns;
  return (x > y) - (x < y);
}

static int prune_select(void *ctx, const cg_prime_set *cur, bool *keep) {
  prune_state *p = ctx;
  size_t n = cg_prime_count(cur);
  uint64_t total = CG_PRIME_HEADER_BYTES;
  for (size_t i = 0; i < n; i++) {
    const cg_prime_record *r = cg_prime_get(cur, i);
    if (p->by_age && r->last_ns < p->cutoff_ns) keep[i] = false;
    else total += cg_prime_record_disk_size(r);
  }
  if (p->by_size && total > p->max_size) {
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return -1;
    for (size_t i = 0; i < n; i++) order[i] = i;
    sort_set = cur;
    qsort(order, n, sizeof *order, by_last_needed);
    for (size_t k = 0; k < n && total > p->max_size; k++) {
      if (!keep[order[k]]) continue;
      keep[order[k]] = false;
      p->dropped_by_size++;
      total -= cg_prime_record_disk_size(cg_prime_get(cur, order[k]));
    }
    free(order);
  }
  p->images = n;
  for (size_t i = 0; i < n; i++) {
    uint64_t size = cg_prime_record_disk_size(cg_prime_get(cur, i));
    if (!i || size < p->smallest) p->smallest = size;
    if (keep[i]) p->kept++;
    else p->dropped++;
  }
  p->kept_bytes = total;
  /* A size no image fits in drops every one: refused, said before anything
   * is dropped (a typo such as 1K for 1M would empty the file). */
  if (p->by_size && n && !p->kept && p->dropped_by_size &&
      p->max_size < CG_PRIME_HEADER_BYTES + p->smallest)
    return p->refuse = true, -1;
  return 0;
}

static void count_entry(void *ctx, const cg_prime_walk_entry *e) {
  verify_state *v = ctx;
  if (e->state == CG_PRIME_REC_OK) v->ok++;
  else v->bad++;
}
static void ignore_line(void *ctx, const char *line) { (void)ctx, (void)line; }

static int cmd_prune(int argc, char **argv) {
  prune_state p = {0};
  const char *file = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = NULL;
    bool age = strncmp(a, "--older-than", 12) == 0 && (a[12] == 0 || a[12] == '=');
    bool size = strncmp(a, "--max-size", 10) == 0 && (a[10] == 0 || a[10] == '=');
    if (age || size) {
      const char *eq = strchr(a, '=');
      val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
      if (!val) return usage_error("%s needs a value", age ? "--older-than" : "--max-size");
    }
    if (age) {
      char *end;
      errno = 0;
      unsigned long long days = strtoull(val, &end, 10);
      if (!isdigit((unsigned char)*val) || *end || errno || days > 365000)
        return usage_error("--older-than wants a whole number of days, not '%s'", val);
      uint64_t now = (uint64_t)time(NULL) * 1000000000u, age_ns = days * 86400ull * 1000000000u;
      p.by_age = true;
      p.cutoff_ns = now > age_ns ? now - age_ns : 0;
    } else if (size) {
      if (cg_prime_parse_size(val, &p.max_size) != 0)
        return usage_error("--max-size wants a size such as 4096, 512K, 64M or 1G, not '%s'", val);
      p.by_size = true;
    } else if (!strcmp(a, "--dry-run") || !strcmp(a, "-n")) {
      p.dry_run = true;
    } else if (a[0] == '-' && a[1]) {
      return usage_error("unknown option '%s' for prune", a);
    } else if (file) {
      return usage_error("prune takes at most one FILE");
    } else {
      file = a;
    }
  }
  char path[PATH_MAX];
  int rc = pick_file(file, path, sizeof path);
  if (rc) return rc;
  if (!file_exists(path)) {
    printf("%s: no priming file; nothing to prune\n", path);
    return CG_EXIT_OK;
  }
  /* Damaged records are dropped by the rewrite without reaching prune_select:
   * count them first, so that what was dropped is said. */
  verify_state v = {.path = path, .last_pct = -1};
  if (cg_prime_verify(path, count_entry, NULL, &v, ignore_line, NULL) < 0) v.bad = 0;
  if (p.dry_run) {
    /* the same choice on the file as it is, nothing written */
    cg_prime_set *set;
    int damage = 0;
    if (cg_prime_load(path, &set, ignore_line, &damage) != 0)
      return fail("cannot use %s; it is unchanged", path);
    size_t n = cg_prime_count(set);
    bool *keep = malloc((n ? n : 1) * sizeof *keep);
    if (!keep) {
      cg_prime_free(set);
      return fail("out of memory");
    }
    for (size_t i = 0; i < n; i++) keep[i] = true;
    int sel = prune_select(&p, set, keep);
    free(keep);
    cg_prime_free(set);
    if (sel != 0 && !p.refuse) return fail("out of memory");
  } else if (cg_prime_rewrite(path, prune_select, &p, NULL, 0, warn_line, NULL) != 0 && !p.refuse) {
    return fail("%s not pruned (see above); it is unchanged", path);
  }
  if (p.refuse)
    return fail("--max-size %llu bytes is smaller than every image of %s (the smallest takes %llu "
                "bytes with the file's header): it would drop all %zu; nothing dropped (give a "
                "larger size, e.g. 64M; capguard prime rm drops chosen images)",
                (unsigned long long)p.max_size, path,
                (unsigned long long)(CG_PRIME_HEADER_BYTES + p.smallest), p.images);
  printf("%s: %s %zu image%s (%llu bytes), %s %zu image%s and %zu damaged record%s%s\n", path,
         p.dry_run ? "would keep" : "kept", p.kept, cg_plural(p.kept),
         (unsigned long long)p.kept_bytes, p.dry_run ? "drop" : "dropped", p.dropped,
         cg_plural(p.dropped), v.bad, cg_plural(v.bad),
         p.dry_run ? " (--dry-run: the file is unchanged)" : "");
  return CG_EXIT_OK;
}

/* ---- merge ---- */

/* Merging is idempotent: an image's hit count becomes the largest any file
 * (OUT or an IN) holds, never a sum, so that merging the same file again, or
 * a file already merged into another IN, changes nothing. The rewrite sums
 * the copies of one image, so each IN copy is given what it adds to OUT's
 * count: the first the rest up to the largest, the others nothing. */
static bool same_image(const cg_prime_record *a, const cg_prime_record *b) {
  return a->hash.hi == b->hash.hi && a->hash.lo == b->hash.lo &&
         cg_prime_same_entry(a, b->bytes, b->size, b->options, b->n_options);
}

static void hits_as_largest(const char *out_path, cg_prime_set **in, size_t n) {
  cg_prime_set *out = NULL;
  if (!file_exists(out_path) || cg_prime_load(out_path, &out, NULL, NULL) != 0)
    out = NULL;
  for (size_t i = 0; i < n; i++) {
    for (size_t r = 0; r < cg_prime_count(in[i]); r++) {
      /* records are the merge's own copies, loaded into memory by it */
      cg_prime_record *rec = (cg_prime_record *)cg_prime_get(in[i], r);
      bool earlier = false;
      uint64_t most = rec->hits;
      for (size_t j = 0; j < n; j++)
        for (size_t k = 0; k < cg_prime_count(in[j]); k++) {
          const cg_prime_record *o = cg_prime_get(in[j], k);
          if ((j == i && k == r) || !same_image(rec, o))
            continue;
          earlier |= j < i || (j == i && k < r);
          if (o->hits > most)
            most = o->hits;
        }
      const cg_prime_record *had = out ? cg_prime_find_hashed(out, rec->hash, rec->bytes, rec->size, rec->options, rec->n_options) : NULL;
      uint64_t base = had ? had->hits : 0;
      rec->hits = earlier || most <= base ? 0 : most - base;
    }
  }
  cg_prime_free(out);
}

static int cmd_merge(int argc, char **argv) {
  if (argc < 3) return usage_error("merge takes OUT and at least one IN");
  if (reject_options(argc, argv)) return CG_EXIT_USAGE;
  size_t given = (size_t)argc - 2, n = 0;
  cg_prime_set **in = calloc(given, sizeof *in);
  struct stat *seen = calloc(given + 1, sizeof *seen);
  if (!in || !seen) {
    free(in);
    free(seen);
    return fail("out of memory");
  }
  int rc = CG_EXIT_OK, damage = 0;
  /* Each file once: OUT's own records are already in OUT, and an IN named
   * twice would have its hit counts added twice. */
  bool out_there = stat(argv[1], &seen[0]) == 0;
  size_t n_seen = out_there ? 1 : 0;
  for (size_t i = 0; i < given && rc == CG_EXIT_OK; i++) {
    const char *p = argv[i + 2];
    struct stat st;
    if (!file_exists(p) || stat(p, &st) != 0) {
      rc = fail("%s does not exist; check the name", p);
      break;
    }
    bool dup = false;
    for (size_t k = 0; k < n_seen && !dup; k++)
      dup = seen[k].st_dev == st.st_dev && seen[k].st_ino == st.st_ino;
    if (dup) {
      fprintf(stderr, "capguard prime: %s is %s; merged once\n", p,
              out_there && seen[0].st_dev == st.st_dev && seen[0].st_ino == st.st_ino
                  ? "OUT itself, whose images are already there"
                  : "named more than once");
      continue;
    }
    seen[n_seen++] = st;
    rc = load(p, &in[n++], &damage);
  }
  free(seen);
  if (rc == CG_EXIT_OK && out_there)
    rc = cg_prime_merge_identities(argv[1], in, n);
  else if (rc == CG_EXIT_OK)
    rc = cg_prime_merge_identities(NULL, in, n);
  if (rc == CG_EXIT_OK)
    hits_as_largest(argv[1], in, n);
  if (rc == CG_EXIT_OK) {
    if (cg_prime_rewrite(argv[1], NULL, NULL, (const cg_prime_set *const *)in, n, warn_line,
                         NULL) != 0) {
      rc = fail("%s not written (see above); it is unchanged", argv[1]);
    } else {
      cg_prime_set *out;
      if (cg_prime_load(argv[1], &out, warn_line, NULL) == 0) {
        printf("%s: %zu image%s\n", argv[1], cg_prime_count(out), cg_plural(cg_prime_count(out)));
        cg_prime_free(out);
      }
    }
  }
  for (size_t i = 0; i < given; i++) cg_prime_free(in[i]);
  free(in);
  return rc == CG_EXIT_OK && damage ? CG_EXIT_FINDING : rc;
}

/* ---- rm ---- */

typedef struct {
  char **prefixes;
  int n;
  const char *path;
  int rc;
} rm_state;

static int rm_select(void *ctx, const cg_prime_set *cur, bool *keep) {
  rm_state *r = ctx;
  for (int i = 0; i < r->n; i++) {
    long m = match_prefix(cur, r->prefixes[i]);
    if (m < 0) {
      r->rc = prefix_problem(m, r->prefixes[i], r->path);
      return -1;
    }
    keep[m] = false;
  }
  for (int i = 0; i < r->n; i++) {
    long m = match_prefix(cur, r->prefixes[i]);
    const cg_prime_record *rec = cg_prime_get(cur, (size_t)m);
    char hex[33];
    cg_hash_format(rec->hash, hex);
    printf("removed %.12s  %s  %llu bytes\n", hex, cg_image_kind_name(rec->kind),
           (unsigned long long)rec->size);
  }
  return 0;
}

static int cmd_rm(int argc, char **argv) {
  if (reject_options(argc, argv)) return CG_EXIT_USAGE;
  if (argc < 2) return usage_error("rm takes at least one HASH-PREFIX");
  const char *file = NULL;
  int n = argc - 1;
  if (n >= 2 && !is_hex_prefix(argv[argc - 1])) {
    file = argv[argc - 1];
    n--;
  }
  for (int i = 1; i <= n; i++)
    if (!is_hex_prefix(argv[i]))
      return usage_error("'%s' is not a hash prefix (1 to 32 hex digits)", argv[i]);
  char path[PATH_MAX];
  int rc = pick_file(file, path, sizeof path);
  if (rc) return rc;
  if (!file_exists(path)) return fail("%s does not exist; nothing to remove", path);
  rm_state r = {argv + 1, n, path, CG_EXIT_OK};
  if (cg_prime_rewrite(path, rm_select, &r, NULL, 0, warn_line, NULL) != 0)
    return r.rc ? r.rc : fail("%s unchanged; see the line above", path);
  return CG_EXIT_OK;
}

/* ---- dispatch ---- */

int cg_cmd_prime(int argc, char **argv) {
  /* learn and check hand everything after -- to CMD, --help included. */
  if (argc >= 2 && !strcmp(argv[1], "learn")) return cg_cmd_prime_learn(argc - 1, argv + 1);
  if (argc >= 2 && !strcmp(argv[1], "check")) return cg_cmd_prime_check(argc - 1, argv + 1);
  if (argc >= 2 && (!strcmp(argv[1], "export") || !strcmp(argv[1], "import") || !strcmp(argv[1], "info")))
    return cg_cmd_prime_oci(argc - 1, argv + 1);
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      /* a command's own help: its lines of the overview, and where FILE is */
      static const struct {
        const char *name, *text;
      } helps[] = {
          {"list", "usage: capguard prime list [FILE]\n\nOne line per image of the priming file: "
                   "hash, kind, arch, size, copies, hits,\nlast needed (UTC date), kernel names.\n"
                   "  copies  how many copies of the image the next run preloads: the most one\n"
                   "          process had loaded at once during capture (identical bytes loaded\n"
                   "          again, as Triton specialisations that compile alike are, need two)\n"
                   "  hits    how often processes needed the image during capture: one for each\n"
                   "          load that recorded it, one for each process it was served to; summed\n"
                   "          over every run that used the file (prune goes by last needed)\n"},
          {"show", "usage: capguard prime show HASH-PREFIX [FILE]\n\nEvery field of the one "
                   "image whose hash starts with HASH-PREFIX.\n"},
          {"verify", "usage: capguard prime verify [FILE]\n\nCheck every record's checksum; "
                     "exit 1 and name the damaged ones.\n"},
          {"prune", "usage: capguard prime prune [--older-than DAYS] [--max-size SIZE] [--dry-run] "
                    "[FILE]\n\n"
                    "Drop images not needed for DAYS days, then the least recently needed\n"
                    "until the file fits SIZE (e.g. 64M); also drops damaged records. A SIZE\n"
                    "smaller than every image is refused (it would drop them all).\n"
                    "  -n, --dry-run  say what would be kept and dropped; change nothing\n"},
          {"merge", "usage: capguard prime merge OUT IN...\n\nAdd the images of every IN to OUT "
                    "(created if missing), once each; an\nimage's hit count is the largest any "
                    "file holds, so merging again\nchanges nothing.\n"},
          {"rm", "usage: capguard prime rm HASH-PREFIX... [FILE]\n\nRemove images; the last "
                 "argument is FILE unless it is all hex digits\n(write ./NAME).\n"},
      };
      for (size_t h = 0; i > 1 && h < sizeof helps / sizeof *helps; h++)
        if (!strcmp(argv[1], helps[h].name)) {
          printf("%s\nFILE defaults to $CAPGUARD_PRIME, else $XDG_CACHE_HOME/capguard/prime.cgp,\n"
                 "else ~/.cache/capguard/prime.cgp.\n", helps[h].text);
          return CG_EXIT_OK;
        }
      fputs(usage_text, stdout);
      return CG_EXIT_OK;
    }
  if (argc < 2) return usage_error("no command given");
  static const struct {
    const char *name;
    int (*run)(int, char **);
  } cmds[] = {{"list", cmd_list},   {"show", cmd_show},   {"verify", cmd_verify},
              {"prune", cmd_prune}, {"merge", cmd_merge}, {"rm", cmd_rm}};
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
    if (strcmp(argv[1], cmds[i].name) == 0) return cmds[i].run(argc - 1, argv + 1);
  return usage_error("unknown command '%s'", argv[1]);
}
