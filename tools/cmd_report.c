/* capguard report [--json | --html FILE] [LOG...]: what broke, where, and what to do. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "report_render.h"

static const char USAGE[] = "capguard report [--json] [--html FILE] [LOG...]";
static const char ME[] = "capguard report";

static void help(void) {
  printf("usage: %s\n\n"
         "Read capguard logs (JSON Lines; several processes and runs may share one file or be\n"
         "given as several files) and print the captures that broke, the first call that broke\n"
         "each, the kernels and call sites involved (deduplicated, with counts), and what to do.\n\n"
         "  LOG          a log file, or - for standard input (default: $CAPGUARD_LOG)\n"
         "  --json       print the findings as one JSON document instead of text\n"
         "  --html FILE  also write a self-contained HTML page with a timeline of captures\n"
         "  -h, --help   show this help\n\n"
         "Unknown keys and lines of a newer log version are ignored; malformed lines are\n"
         "counted and reported in one line.\n"
         "Exit status: 0 no broken capture, 1 a capture broke, 2 usage error or unreadable log.\n",
         USAGE);
}

static int write_html(const cgr_analysis *a, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    cg_error(ME, "cannot write '%s': %s; pick a writable path for --html", path, strerror(errno));
    return -1;
  }
  int rc = cgr_print_html(f, a);
  if (fclose(f) != 0 || rc != 0) {
    cg_error(ME, "writing '%s' failed: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

int cg_cmd_report(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                       {"html", required_argument, NULL, 'H'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  bool json = false;
  const char *html = NULL;
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 'j': json = true; break;
    case 'H': html = optarg; break;
    case 'h': help(); return CG_EXIT_OK;
    case ':': return cg_usage_error(ME, USAGE, "%s needs a value", argv[optind - 1]);
    default: return cg_usage_error(ME, USAGE, "unknown option '%s'", argv[optind - 1]);
    }
  }
  const char *env_log = getenv("CAPGUARD_LOG");
  if (optind == argc && !(env_log && *env_log))
    return cg_usage_error(ME, USAGE, "no log given (pass LOG files, - for stdin, or set CAPGUARD_LOG)");

  cgl_log log;
  cgl_init(&log);
  int rc = CG_EXIT_OK;
  int nfiles = optind == argc ? 1 : argc - optind;
  for (int i = 0; i < nfiles; i++) {
    const char *path = optind == argc ? env_log : argv[optind + i];
    if (cgl_read_file(&log, path, 0) != 0) {
      cg_error(ME, "cannot read '%s': %s; check the path (capguard run prints where its log is)",
               path, strerror(errno));
      rc = CG_EXIT_USAGE;
    }
  }
  if (rc != CG_EXIT_OK) {
    cgl_free(&log);
    return rc;
  }
  /* One line each, on stderr, so stdout stays the report. */
  if (log.malformed)
    fprintf(stderr, "%s: %zu malformed line%s skipped (first: %s)\n", ME, log.malformed,
            log.malformed == 1 ? "" : "s", log.first_malformed);
  if (log.newer)
    fprintf(stderr, "%s: %zu line%s of a newer log version ignored; a newer capguard reads them\n",
            ME, log.newer, log.newer == 1 ? "" : "s");

  cgr_analysis a;
  cgr_analyse(&log, &a);
  if (json) {
    if (cgr_print_json(stdout, &a) != 0)
      rc = CG_EXIT_USAGE;
  } else {
    cgr_print_text(stdout, &a, cg_palette_for(stdout));
  }
  if (html && write_html(&a, html) != 0)
    rc = CG_EXIT_USAGE;
  if (rc == CG_EXIT_OK && a.n_broken)
    rc = CG_EXIT_FINDING;
  cgr_free(&a);
  cgl_free(&log);
  if (fflush(stdout) != 0 && rc == CG_EXIT_OK)
    rc = CG_EXIT_USAGE;
  return rc;
}
