/* capguard report [--json | --html FILE] [LOG...]: what broke, where, and what to do. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "doc_path.h"
#include "log_latest.h"
#include "report_render.h"
#include "plural.h"
#include "xalloc.h"

static const char USAGE[] =
    "capguard report [--all] [--json] [--html FILE] [--trace FILE] [LOG...]";
static const char ME[] = "capguard report";

static void help(void) {
  char trace_doc[4200];
  printf("usage: %s\n\n"
         "Read capguard logs (JSON Lines; several processes and runs may share one file or be\n"
         "given as several files) and print the captures that broke, the first call that broke\n"
         "each, the kernels and call sites involved (deduplicated, with counts), and what to do.\n"
         "A run is one 'capguard run', else one top-level process and its descendants; when\n"
         "the logs hold several runs, each is listed and the report is of the latest.\n\n"
         "  LOG           a log file, or - for standard input (default: $CAPGUARD_LOG); a\n"
         "                name with %%p (as given to capguard run --log) reads every\n"
         "                per-process file it names\n"
         "  --all         report on every run, not only the latest\n"
         "  --json        print the findings as one JSON document instead of text\n"
         "  --html FILE   also write a self-contained HTML page with a timeline of captures\n"
         "  --trace FILE  also write a Chrome/Perfetto trace (JSON): a track per process and\n"
         "                thread, captures as spans, calls during capture as instants;\n"
         "                times exact to the nanosecond (%s: lining it up\n"
         "                with an nsys profile)\n"
         "  -h, --help    show this help\n\n"
         "Unknown keys and lines of a newer log version are ignored; malformed lines are\n"
         "counted and reported in one line.\n"
         "Exit status: 0 no capture broke (in the runs reported), 1 a capture broke, a\n"
         "process that used CUDA ended without an exit record (killed, crashed, _exit), or\n"
         "the log is cut short; 2 usage error, unreadable log, or input that is not a\n"
         "capguard log.\n",
         USAGE, cg_doc_path("trace.md", trace_doc, sizeof trace_doc));
}

static int write_page(const cgr_report *r, const char *path, const char *option,
                      int (*print)(FILE *, const cgr_report *)) {
  FILE *f = fopen(path, "w");
  if (!f) {
    cg_error(ME, "cannot write '%s': %s; pick a writable path for %s", path, strerror(errno),
             option);
    return -1;
  }
  int rc = print(f, r);
  if (fclose(f) != 0 || rc != 0) {
    cg_error(ME, "writing '%s' failed: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

/* Whether path can be written (its folder exists and is writable, and the
 * file, if there, is): checked before the report prints anything, so that a
 * bad --html or --trace path is the one line said, not a report then an error. */
static bool writable_path(const char *path, const char *option) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == path)
    snprintf(dir, sizeof dir, "/");
  else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  struct stat st;
  const char *why = NULL;
  if (stat(dir, &st) != 0)
    why = strerror(errno);
  else if (!S_ISDIR(st.st_mode))
    why = "its folder is not a directory";
  else if (stat(path, &st) == 0 ? access(path, W_OK) != 0 : access(dir, W_OK) != 0)
    why = strerror(errno);
  else if (!*(slash ? slash + 1 : path) || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
    why = "it is a directory";
  if (why)
    cg_error(ME, "cannot write '%s': %s; pick a writable path for %s", path, why, option);
  return why == NULL;
}

/* The files to read, in order: LOG arguments, a %p pattern's every file. */
typedef struct {
  char **paths;
  size_t n;
} log_files;

static void add_path(log_files *lf, const char *path) {
  const char *doing = "listing the logs";
  lf->paths = cg_xrealloc(lf->paths, (lf->n + 1) * sizeof *lf->paths, doing);
  size_t len = strlen(path) + 1;
  lf->paths[lf->n++] = memcpy(cg_xrealloc(NULL, len, doing), path, len);
}

static int add_pattern(log_files *lf, const char *pattern) {
  glob_t g;
  int found = cg_log_pattern_glob(pattern, &g);
  if (found != 0) {
    cg_error(ME, "no file matches '%s' (%%p stands for a process id, %%h the host, %%q{VAR} a "
                 "variable's value, %%%% a '%%'); check the path (capguard run prints where its log is)",
             pattern);
    return -1;
  }
  for (size_t k = 0; k < g.gl_pathc; k++)
    add_path(lf, g.gl_pathv[k]);
  globfree(&g);
  return 0;
}

static void free_files(log_files *lf) {
  for (size_t i = 0; i < lf->n; i++)
    free(lf->paths[i]);
  free(lf->paths);
}

static int read_files(cgl_log *log, const log_files *lf) {
  /* The model's arrays (a process, a capture, a call each) grow by half
   * again, line after line. Past 1 MiB each is a mapping of its own, grown
   * in place (mremap): with glibc's threshold left to rise as it does (to
   * 32 MiB once a large block is freed), each growth of one under it is a
   * copy, and the block it leaves is a hole in the heap that stays resident
   * (10^5 processes: 93 MiB at the peak, 86 with the threshold fixed). */
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  int rc = CG_EXIT_OK;
  for (size_t i = 0; i < lf->n; i++)
    if (cgl_read_file(log, lf->paths[i], 0) != 0) {
      if (errno == ETIMEDOUT)
        cg_error(ME, "cannot read '%s': a FIFO no writer opened within %d s; start its writer first", lf->paths[i],
                 CGL_FIFO_WAIT_MS / 1000);
      else
        cg_error(ME, "cannot read '%s': %s; check the path (capguard run prints where its log is)", lf->paths[i],
                 strerror(errno));
      rc = CG_EXIT_USAGE;
    }
  return rc;
}

/* After a census (log->census), the latest run read alone into part and
 * view (have_part), or, when there is one run or its lines interleave with
 * another's, log read again whole. Then view is of the latest run when
 * one_run, and log (and part) sealed (cgl_seal). Returns 0, or -1 after
 * saying why. */
static int latest_run(cgl_log *log, const log_files *lf, bool one_run, cgl_log *part, cgl_log *view,
                      bool *have_part) {
  if (one_run && log->census) {
    *have_part = cgl_read_run(log, log->n_runs - 1, part, view) == 0;
    if (!*have_part && errno) {
      cg_error(ME, "cannot read the logs again: %s", strerror(errno));
      return -1;
    }
  }
  if (log->census && !*have_part) {
    cgl_free(log);
    cgl_init(log);
    if (read_files(log, lf) != CG_EXIT_OK)
      return -1;
    cgl_group_runs(log);
  }
  if (one_run && !*have_part)
    cgl_view(log, log->n_runs - 1, view);
  /* what only reading needed goes, so that the report's tables take its room */
  cgl_seal(log);
  if (*have_part)
    cgl_seal(part);
  return 0;
}

/* Lines past the cap (docs/reports.md): skipped, and an input without end
 * (a device, a pipe that never ends a line) not read further. */
static void say_over_lines(const cgl_log *log) {
  if (log->over_lines)
    fprintf(stderr, "%s: %zu line%s longer than %d MiB skipped%s\n", ME, log->over_lines,
            cg_plural(log->over_lines), CGL_LINE_MAX >> 20,
            log->stopped_files ? "; an input that is not a regular file stopped there (a device or pipe "
                                 "without end?)"
                               : "");
}

int cg_cmd_report(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                       {"html", required_argument, NULL, 'H'},
                                       {"trace", required_argument, NULL, 'T'},
                                       {"all", no_argument, NULL, 'a'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  bool json = false, all = false;
  const char *html = NULL, *trace = NULL;
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 'j': json = true; break;
    case 'H': html = optarg; break;
    case 'T': trace = optarg; break;
    case 'a': all = true; break;
    case 'h': help(); return CG_EXIT_OK;
    case ':': return cg_usage_error(ME, USAGE, "%s needs a value", argv[optind - 1]);
    default: return cg_usage_error(ME, USAGE, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if ((html && !writable_path(html, "--html")) || (trace && !writable_path(trace, "--trace")))
    return CG_EXIT_USAGE;
  const char *env_log = getenv("CAPGUARD_LOG");
  /* `capguard report < log`, `zcat log | capguard report`: standard input
   * when it is a file or a pipe (a terminal or /dev/null: no log given) */
  struct stat in;
  if (optind == argc && !(env_log && *env_log) && fstat(STDIN_FILENO, &in) == 0 &&
      (S_ISREG(in.st_mode) || S_ISFIFO(in.st_mode) || S_ISSOCK(in.st_mode)))
    env_log = "-";
  if (optind == argc && !(env_log && *env_log))
    return cg_usage_error(ME, USAGE, "no log given (pass LOG files, - for stdin, or set CAPGUARD_LOG)");

  log_files lf = {NULL, 0};
  int rc = CG_EXIT_OK;
  int nfiles = optind == argc ? 1 : argc - optind;
  bool from_stdin = false;
  for (int i = 0; i < nfiles; i++) {
    const char *path = optind == argc ? env_log : argv[optind + i];
    struct stat st;
    if (strchr(path, '%') && strcmp(path, "-") && stat(path, &st) != 0) {
      /* the pattern capguard run was given: every per-process file it names */
      if (add_pattern(&lf, path) != 0)
        rc = CG_EXIT_USAGE;
      continue;
    }
    /* a pipe, a FIFO, /dev/stdin, <(zcat ...): read once, as standard input
     * is (the census reads a file twice) */
    from_stdin |= !strcmp(path, "-") || stat(path, &st) != 0 || !S_ISREG(st.st_mode);
    add_path(&lf, path);
  }
  /* Of the latest run only, a census first (log_latest.h): the events of
   * older runs are counted, not kept. Standard input cannot be read twice. */
  cgl_log log;
  cgl_init(&log);
  log.census = !all && !from_stdin;
  if (rc == CG_EXIT_OK)
    rc = read_files(&log, &lf);
  if (rc != CG_EXIT_OK) {
    cgl_free(&log);
    free_files(&lf);
    return rc;
  }
  say_over_lines(&log);
  /* A file with no capguard record is not an all-clear: it is the wrong input. */
  if (!cgl_is_capguard_log(&log)) {
    cg_error(ME, "not a capguard log: %s%s%s; capguard run prints where its log is",
             log.lines ? "no capguard record in " : "nothing in ",
             nfiles == 1 ? log.files[0] : "the given files",
             log.malformed ? " (every line malformed)" : "");
    cgl_free(&log);
    free_files(&lf);
    return CG_EXIT_USAGE;
  }
  /* One line each, on stderr, so stdout stays the report. */
  if (log.malformed)
    fprintf(stderr, "%s: %zu malformed line%s skipped (first: %s)\n", ME, log.malformed,
            cg_plural(log.malformed), log.first_malformed);
  if (log.newer)
    fprintf(stderr, "%s: %zu line%s of a newer log version ignored; a newer capguard reads them\n",
            ME, log.newer, cg_plural(log.newer));

  /* The latest run decides, unless every run is asked for. */
  cgl_group_runs(&log);
  cgl_log part, view;
  bool one_run = !all && log.n_runs > 1, have_part = false;
  if (latest_run(&log, &lf, one_run, &part, &view, &have_part) != 0) {
    cgl_free(&log);
    free_files(&lf);
    return CG_EXIT_USAGE;
  }
  /* The report, built once: every rendering prints it. */
  cgr_report r;
  cgr_report_build(&r, one_run ? &view : &log, &log, one_run ? log.n_runs - 1 : SIZE_MAX);
  if (json) {
    if (cgr_print_json(stdout, &r) != 0)
      rc = CG_EXIT_USAGE;
  } else {
    cgr_print_text(stdout, &r, cg_palette_for(stdout));
  }
  if (html && write_page(&r, html, "--html", cgr_print_html) != 0)
    rc = CG_EXIT_USAGE;
  if (trace && write_page(&r, trace, "--trace", cgr_print_trace) != 0)
    rc = CG_EXIT_USAGE;
  /* Not healthy either: a process that left no exit record, a log cut short. */
  if (rc == CG_EXIT_OK && (r.a.n_broken || r.a.n_stale_reads || r.a.ended_early || log.cut_files))
    rc = CG_EXIT_FINDING;
  cgr_report_free(&r);
  if (one_run)
    cgl_free(&view);
  if (have_part)
    cgl_free(&part);
  cgl_free(&log);
  free_files(&lf);
  if (fflush(stdout) != 0 && rc == CG_EXIT_OK)
    rc = CG_EXIT_USAGE;
  return rc;
}
