/* --html: one self-contained page (inline CSS and SVG, no scripts, nothing
 * fetched). At the top, what ran: each run's command line, the driver and the
 * GPU architecture its images were built for; then a timeline per run (each
 * on its own axis) of every process's captures and the calls inside them;
 * then the findings of the text report, "why" included, and the calls during
 * capture as a table, so that nothing lives only in a hover tooltip.
 * One word for a capture that did not survive: broken. Linear in the log:
 * captures and calls are bucketed by process once; the drawing stops at a
 * fixed number of shapes (a million-capture log makes no useful picture). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ended_early.h"
#include "html_text.h"
#include "kernel_display.h"
#include "findings.h"
#include "report_hang.h"
#include "report_stale.h"
#include "report_request.h"
#include "request_path.h"
#include "capture_totals.h"
#include "offender.h"
#include "report_ranks.h"
#include "report_capture_time.h"
#include "report_render.h"
#include "rerun_command.h"
#include "plural.h"

enum { MAX_SHAPES = 4000, MAX_ROWS = 500 };

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

static const char *or(const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* A verdict's colour in the timeline and the tables. No default: a verdict
 * row added to log_schema.h without a colour here is a -Wswitch error. A
 * word this reader does not know (a newer capguard's) is grey. */
static const char *verdict_colour(cg_verdict v) {
  switch (v) {
  case CG_VERDICT_REFUSED:
    return "#d62728";
  case CG_VERDICT_ALLOWED:
    return "#ff7f0e";
  case CG_VERDICT_EMULATED:
    return "#e7298a";
  case CG_VERDICT_SERVED:
    return "#1f77b4";
  case CG_VERDICT_RESCUED:
    return "#9467bd";
  case CG_VERDICT_DEFERRED:
    return "#7f7f7f";
  case CG_VERDICT_FAILED:
    return "#8c564b";
  case CG_VERDICT_DEFERRED_FREE:
    return "#bcbd22";
  case CG_VERDICT_DEFERRED_DESTROY:
    return "#393b79";
  case CG_VERDICT_NOT_READY:
    return "#17becf";
  case CG_VERDICT_ESCAPED:
    return "#ffbb78";
  case CG_VERDICT_BROKE:
    return "#1a1a1a";
  case CG_VERDICT_STALE:
    return "#4d004b";
  case CG_VERDICT_WAITING:
    return "#637939";
  case CG_VERDICT_COUNT:
    break;
  }
  return "#888";
}

static const char *verdict_word(cg_verdict v) { return or(cgl_word(&cg_verdicts, v), "?"); }

/* The capture's state in the page's one vocabulary. */
static const char *capture_word(const cgr_report *rep, size_t c) {
  const cgr_rows *rows = &rep->rows;
  if (cgr_report_capture_broken(rep, c)) return "broken";
  if (rows->caps[c].status == CG_CAPTURE_ENDED) return "ended";
  return "open at exit";
}

static const char CSS[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:16px;color:#222;"
    "max-width:1400px}"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}"
    "h3{font-size:14px;margin:14px 0 4px;font-weight:600}"
    ".sum{color:#444}.bad{color:#c00;font-weight:600}.good{color:#080;font-weight:600}"
    ".warn{color:#a60}table{border-collapse:collapse;margin:4px 0;max-width:100%}"
    /* a table wider than the window (a long name that must not break
     * mid-token) scrolls by itself instead of widening the page, so the
     * timeline still fits the window */
    "table{display:block;overflow-x:auto}"
    "td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
    /* a long name wraps only where it must, never mid-token in a narrow column */
    "td code{overflow-wrap:break-word;word-break:normal}"
    /* a command: on a line of its own, selected whole with one click */
    "pre.cmd{margin:4px 0 8px;padding:4px 8px;background:#f4f4f4;white-space:pre-wrap;"
    "overflow-wrap:break-word;user-select:all}"
    "th{background:#f4f4f4}td.n{text-align:right}code{font:12px ui-monospace,monospace}"
    "svg{display:block;box-sizing:border-box;width:100%;height:auto;border:1px solid #ddd;"
    "background:#fcfcfc}"
    "svg text{font:13px sans-serif;fill:#333}"
    ".legend span{display:inline-block;margin-right:14px}"
    ".sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}";

/* Times clamped to [0, 2^62] before any arithmetic: a log can hold anything,
 * and signed overflow is undefined. Differences are taken in double. */
static long long clamp_t(long long t) {
  const long long max = 1LL << 62;
  return t < 0 ? 0 : t > max ? max : t;
}

typedef struct {
  long long t0, t1;
} span;

static long long cap_begin(const cgr_report *rep, size_t c) { return clamp_t(rep->rows.caps[c].begin_ns); }

/* Axis label in a unit that suits the labels' spacing, with as many digits
 * as the spacing has (a 1-2-5 step: at most one after the point). */
static void tick_label(char *buf, size_t cap, double ns, double spacing_ns) {
  if (spacing_ns < 1e6)
    snprintf(buf, cap, "%.0f \u00b5s", ns / 1e3);
  else if (spacing_ns < 1e9)
    snprintf(buf, cap, "%.0f ms", ns / 1e6);
  else
    snprintf(buf, cap, "%.0f s", ns / 1e9);
}

enum { LABEL_W = 230, PLOT_W = 760, LANE_H = 22, ROW_PAD = 8, AXIS_H = 28, MAX_LANES = 16 };

static double xpos(span s, long long t) {
  t = clamp_t(t);
  if (t < s.t0) t = s.t0;
  if (t > s.t1) t = s.t1;
  return LABEL_W + ((double)t - (double)s.t0) * PLOT_W / ((double)s.t1 - (double)s.t0);
}

/* Captures and calls of each process, bucketed once (counting sort):
 * process p's are [start[p], start[p + 1]). */
typedef struct {
  size_t *cap_start, *caps, *ev_start, *evs;
} buckets;

static bool bucket(const cgr_report *rep, buckets *b) {
  const cgr_rows *rows = &rep->rows;
  size_t np = rows->n_procs;
  b->cap_start = calloc(np + 2, sizeof *b->cap_start);
  b->ev_start = calloc(np + 2, sizeof *b->ev_start);
  b->caps = malloc((rows->n_caps + 1) * sizeof *b->caps);
  b->evs = malloc((rows->n_evs + 1) * sizeof *b->evs);
  if (!b->cap_start || !b->ev_start || !b->caps || !b->evs) return false;
  for (size_t c = 0; c < rows->n_caps; c++) b->cap_start[rows->caps[c].proc + 2]++;
  for (size_t i = 0; i < rows->n_evs; i++) b->ev_start[rows->evs[i].proc + 2]++;
  for (size_t p = 2; p < np + 2; p++) {
    b->cap_start[p] += b->cap_start[p - 1];
    b->ev_start[p] += b->ev_start[p - 1];
  }
  for (size_t c = 0; c < rows->n_caps; c++) b->caps[b->cap_start[rows->caps[c].proc + 1]++] = c;
  for (size_t i = 0; i < rows->n_evs; i++) b->evs[b->ev_start[rows->evs[i].proc + 1]++] = i;
  return true;
}

static void unbucket(buckets *b) {
  free(b->cap_start);
  free(b->ev_start);
  free(b->caps);
  free(b->evs);
}

/* The span of one run: everything its processes logged. */
static span run_span(const cgr_report *rep, size_t run) {
  const cgr_rows *rows = &rep->rows;
  span s = {INT64_MAX, 0};
  for (size_t p = 0; p < rows->n_procs; p++) {
    const cgl_process *pr = &rows->procs[p];
    if (pr->run_index != run) continue;
    long long a = clamp_t(pr->first_ns), z = clamp_t(pr->last_ns);
    if (a && a < s.t0) s.t0 = a;
    if (z > s.t1) s.t1 = z;
  }
  if (s.t0 == INT64_MAX) s.t0 = s.t1;
  if (s.t1 <= s.t0) s.t1 = s.t0 + 1000000; /* at least 1 ms; t0 <= 2^62: no overflow */
  return s;
}

/* Overlapping captures of a process (several threads) get separate lanes. */
static size_t assign_lanes(const cgr_report *rep, const buckets *b, size_t proc, span s,
                           size_t *lane_of) {
  const cgr_rows *rows = &rep->rows;
  long long lane_end[MAX_LANES] = {0};
  size_t lanes = 1;
  for (size_t k = b->cap_start[proc]; k < b->cap_start[proc + 1]; k++) {
    size_t c = b->caps[k];
    long long bg = cap_begin(rep, c), e = rows->caps[c].end_ns ? clamp_t(rows->caps[c].end_ns) : s.t1;
    size_t l = 0;
    while (l < MAX_LANES - 1 && lane_end[l] && lane_end[l] > bg) l++;
    lane_end[l] = e > bg ? e : bg + 1;
    lane_of[c] = l;
    if (l + 1 > lanes) lanes = l + 1;
  }
  return lanes;
}

static void process_label(FILE *o, const cgr_report *rep, size_t p, size_t y) {
  const cgl_process *pr = &rep->rows.procs[p];
  char who[256], cmd[64];
  cgr_report_process_label(rep, p, who, sizeof who);
  cgr_process_command(pr, cmd, sizeof cmd);
  fprintf(o, "<text x=\"4\" y=\"%zu\"><title>", y + LANE_H / 2 + 4);
  for (size_t i = 0; i < pr->argc; i++) {
    esc(o, pr->argv[i]);
    fputc(' ', o);
  }
  fputs("</title>", o);
  esc(o, who);
  fputc(' ', o);
  /* the label column is narrow: the first word of the command, cut */
  char *sp = strchr(cmd, ' ');
  if (sp) *sp = '\0';
  if (strlen(cmd) > 16) memcpy(cmd + 13, "...", 4);
  esc(o, cmd);
  fputs("</text>\n", o);
}

/* A tick every 1, 2 or 5 times a power of ten, the smallest that gives at
 * most 8 intervals over the span: labels at round values (0, 5, 10 ms), not
 * at tenths of whatever the span happens to be. */
static double tick_step(double span_ns) {
  double step = 1;
  while (step * 8 < span_ns)
    step *= 10;
  while (step / 10 * 8 >= span_ns && step > 1)
    step /= 10;
  if (step / 5 * 8 >= span_ns)
    return step / 5;
  if (step / 2 * 8 >= span_ns)
    return step / 2;
  return step;
}

static void axis(FILE *o, span s, size_t height) {
  double span_ns = (double)s.t1 - (double)s.t0, step = tick_step(span_ns);
  for (int t = 0; t * step <= span_ns * (1 + 1e-9) && t <= 100; t++) {
    double x = LABEL_W + PLOT_W * (t * step / span_ns);
    char label[32];
    fprintf(o, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%zu\" stroke=\"#eee\"/>", x, AXIS_H - 8,
            x, height);
    /* a label at every line (at most 9, 95 px apart), none so near the
     * right end that it would run off the plot */
    if (t && x > LABEL_W + PLOT_W - 30)
      continue;
    tick_label(label, sizeof label, t * step, step);
    fprintf(o, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>\n", x, AXIS_H - 12,
            t == 0 ? "start" : "middle", label);
  }
}

static void capture_box(FILE *o, const cgr_report *rep, size_t c, span s, double y) {
  const cgr_rows *rows = &rep->rows;
  const cgl_capture *cp = &rows->caps[c];
  long long bg = cap_begin(rep, c), e = cp->end_ns ? clamp_t(cp->end_ns) : s.t1;
  double x0 = xpos(s, bg), x1 = xpos(s, e);
  if (x1 - x0 < 3) x1 = x0 + 3;
  const char *word = capture_word(rep, c);
  bool broken = word[0] == 'b', ended = word[0] == 'e';
  fprintf(o,
          "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%d\" rx=\"3\" fill=\"%s\" "
          "stroke=\"%s\"><title>capture %lld, %s, ",
          x0, y, x1 - x0, LANE_H - 6, broken ? "#f4b6b6" : ended ? "#b9e3b9" : "#ddd",
          broken ? "#c00" : ended ? "#3a3" : "#999", cp->id, word);
  esc(o, or(cgl_word(&cg_capture_modes, cp->mode), "?"));
  fputs(", stream ", o);
  esc(o, or(cp->stream, "?"));
  fprintf(o, ", %lld call(s) during it, began ", cp->events);
  esc(o, or(cp->began, "where unknown"));
  fputs("</title></rect>\n", o);
}

/* "; kernels: a, b" in a mark's title: a template's instances named once. */
static void kernels_title(FILE *o, const cgl_strs *kernels) {
  char disp[CG_KERNEL_DISPLAY_MAX], prev[CG_KERNEL_DISPLAY_MAX] = "";
  size_t said = 0;
  for (size_t n = 0; n < kernels->n; n++) {
    if (!cg_kernel_display_new(kernels->v[n], disp, prev))
      continue;
    fputs(said++ ? ", " : "; kernels: ", o);
    esc(o, disp);
  }
}

static void call_marker(FILE *o, const cgr_report *rep, const cgl_event *e, span s, size_t cy) {
  double x = xpos(s, e->time_ns ? e->time_ns : cap_begin(rep, e->capture));
  fprintf(o, "<path d=\"M%.1f %zu l5 5 l-5 5 l-5 -5 z\" fill=\"%s\" stroke=\"#fff\"><title>", x,
          cy - 5, verdict_colour(e->verdict));
  esc(o, or(e->call, "?"));
  fputs(" (", o);
  esc(o, or(cgl_word(&cg_event_kinds, e->kind), "?"));
  fputs(", ", o);
  esc(o, verdict_word(e->verdict));
  fputs(") at ", o);
  esc(o, e->site);
  kernels_title(o, e->kernels);
  fputs("</title></path>\n", o);
}

/* A load on the request path (docs/request-path.md): an orange triangle on
 * its process's first lane, at the moment its load call began. */
#define REQUEST_COLOUR "#e08a00"
static void request_marker(FILE *o, const cgl_request *q, span s, size_t cy) {
  double x = xpos(s, q->time_ns - q->load_ns);
  char took[32], after[32];
  cgr_duration(q->load_ns, took, sizeof took);
  cgr_duration(q->after_ns, after, sizeof after);
  fprintf(o, "<path d=\"M%.1f %zu l6 10 l-12 0 z\" fill=\"" REQUEST_COLOUR "\" stroke=\"#fff\"><title>", x, cy - 5);
  esc(o, or(q->call, "?"));
  fprintf(o, " on the request path, %s after serving began: %s%s at ", after, took, q->served ? " (served)" : "");
  esc(o, q->python_top ? q->python_top : q->site);
  kernels_title(o, q->kernels);
  fputs("</title></path>\n", o);
}

/* A stale read (docs/stale.md): a red cross on its process's first lane, at
 * the free or the launch that named it. */
static void stale_marker(FILE *o, const cgl_stale *st, span s, size_t cy) {
  double x = xpos(s, st->time_ns);
  fprintf(o, "<path d=\"M%.1f %zu l10 10 m0 -10 l-10 10\" stroke=\"%s\" stroke-width=\"3\"><title>", x - 5, cy - 5,
          verdict_colour(CG_VERDICT_STALE));
  esc(o, or(st->call, "?"));
  fputs(st->kind == CG_EV_STALE_LAUNCH ? ": a replay of memory freed since its capture, graph exec "
                                       : ": a free of memory a live graph exec reads, graph exec ", o);
  esc(o, or(st->exec, "?"));
  fputs(" (stale read) at ", o);
  esc(o, st->python_top ? st->python_top : or(st->site, "?"));
  fputs("</title></path>\n", o);
}

/* A process of this run gets a row when it used CUDA: a shell or a compiler
 * a JIT ran would be an empty one (the Processes table lists them). */
static bool timeline_row(const cgr_report *rep, size_t p, size_t run) {
  const cgr_rows *rows = &rep->rows;
  return rows->procs[p].run_index == run && rows->procs[p].cuda;
}

static void panel(FILE *o, const cgr_report *rep, const buckets *b, size_t run, size_t *lane_of,
                  size_t *lanes, size_t *shapes) {
  const cgr_rows *rows = &rep->rows;
  span s = run_span(rep, run);
  size_t height = AXIS_H;
  for (size_t p = 0; p < rows->n_procs; p++) {
    if (!timeline_row(rep, p, run)) continue;
    lanes[p] = assign_lanes(rep, b, p, s, lane_of);
    height += lanes[p] * LANE_H + ROW_PAD;
  }
  /* viewBox and width 100%: the timeline scales to the page, wide or narrow */
  fprintf(o, "<svg viewBox=\"0 0 %d %zu\" role=\"img\">\n", LABEL_W + PLOT_W + 20, height + 10);
  axis(o, s, height);
  size_t y = AXIS_H;
  for (size_t p = 0; p < rows->n_procs; p++) {
    if (!timeline_row(rep, p, run)) continue;
    size_t row_h = lanes[p] * LANE_H;
    process_label(o, rep, p, y);
    fprintf(o, "<line x1=\"0\" y1=\"%zu\" x2=\"%d\" y2=\"%zu\" stroke=\"#ddd\"/>\n",
            y + row_h + ROW_PAD / 2, LABEL_W + PLOT_W + 20, y + row_h + ROW_PAD / 2);
    for (size_t k = b->cap_start[p]; k < b->cap_start[p + 1] && *shapes < MAX_SHAPES; k++) {
      capture_box(o, rep, b->caps[k], s, (double)(y + lane_of[b->caps[k]] * LANE_H + 3));
      ++*shapes;
    }
    for (size_t k = b->ev_start[p]; k < b->ev_start[p + 1] && *shapes < MAX_SHAPES; k++) {
      const cgl_event *e = &rows->evs[b->evs[k]];
      call_marker(o, rep, e, s, y + lane_of[e->capture] * LANE_H + LANE_H / 2);
      ++*shapes;
    }
    for (size_t i = 0; i < rows->n_reqs && *shapes < MAX_SHAPES; i++)
      if (rows->reqs[i].proc == p && rep->request_counts[i]) {
        request_marker(o, &rows->reqs[i], s, y + LANE_H / 2);
        ++*shapes;
      }
    for (size_t i = 0; i < rows->n_stale && *shapes < MAX_SHAPES; i++)
      if (rows->stale[i].proc == p) {
        stale_marker(o, &rows->stale[i], s, y + LANE_H / 2);
        ++*shapes;
      }
    y += row_h + ROW_PAD;
  }
  fputs("</svg>\n", o);
}

/* The verdicts the timeline draws, and the kinds of capture: a key of every
 * word the schema has would bury the two or three the page uses. */
static void legend(FILE *o, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  bool used[CG_VERDICT_COUNT] = {false};
  for (size_t i = 0; i < rows->n_evs; i++)
    if (rows->evs[i].verdict < CG_VERDICT_COUNT)
      used[rows->evs[i].verdict] = true;
  fputs("<p class=\"legend\">", o);
  for (unsigned v = 0; v < CG_VERDICT_COUNT; v++)
    if (used[v])
      fprintf(o, "<span><i class=\"sw\" style=\"background:%s\"></i>call %s</span>",
              verdict_colour(v), cg_verdict_name(v));
  for (size_t i = 0; i < rows->n_reqs; i++)
    if (rep->request_counts[i]) {
      fputs("<span><i class=\"sw\" style=\"background:" REQUEST_COLOUR "\"></i>load on the request path</span>", o);
      break;
    }
  if (rows->n_stale)
    fprintf(o, "<span><i class=\"sw\" style=\"background:%s\"></i>stale read (a free or replay of memory a "
               "live graph reads)</span>", verdict_colour(CG_VERDICT_STALE));
  fputs("<span><i class=\"sw\" style=\"background:#b9e3b9\"></i>capture ended</span>"
        "<span><i class=\"sw\" style=\"background:#f4b6b6\"></i>capture broken</span>"
        "<span><i class=\"sw\" style=\"background:#ddd\"></i>capture open at exit</span></p>\n",
        o);
}

static void timeline(FILE *o, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  size_t *lane_of = calloc(rows->n_caps + 1, sizeof *lane_of);
  size_t *lanes = calloc(rows->n_procs + 1, sizeof *lanes);
  buckets b = {0};
  if (!lane_of || !lanes || !bucket(rep, &b)) {
    fputs("<p>(timeline left out: out of memory)</p>\n", o);
  } else {
    size_t runs = rows->n_runs ? rows->n_runs : 1, shapes = 0;
    for (size_t r = 0; r < runs; r++) {
      if (runs > 1) { /* each run on its own axis: hours between runs squash nothing */
        const cgl_process *top = &rows->procs[rows->runs[r].first_proc];
        char cmd[96];
        cgr_process_command(top, cmd, sizeof cmd);
        fprintf(o, "<h3>run %zu: pid %lld ", r + 1, top->pid);
        esc(o, cmd);
        fputs("</h3>\n", o);
      }
      panel(o, rep, &b, r, lane_of, lanes, &shapes);
    }
    if (shapes >= MAX_SHAPES)
      fprintf(o, "<p class=\"warn\">The timeline stops after %d captures and calls; "
                 "capguard report --trace FILE writes them all for Perfetto.</p>\n", MAX_SHAPES);
    legend(o, rep);
  }
  unbucket(&b);
  free(lane_of);
  free(lanes);
}

/* "CUDA 12.2, CUDA 13.0 (emulated 12.2)": the drivers the run's processes used. */
static void run_drivers(const cgr_report *rep, size_t r, char *buf, size_t cap) {
  const cgr_rows *rows = &rep->rows;
  size_t used = 0, n = 0;
  long long seen[4] = {0};
  buf[0] = '\0';
  for (size_t p = 0; p < rows->n_procs; p++) {
    const cgl_process *pr = &rows->procs[p];
    if ((rows->n_runs && pr->run_index != r) || !pr->cuda || pr->driver_version <= 0) continue;
    long long v = pr->emulate_driver > 0 ? -pr->emulate_driver : pr->driver_version;
    bool have = false;
    for (size_t k = 0; k < n && !have; k++) have = seen[k] == v;
    if (have) continue;
    if (n == sizeof seen / sizeof seen[0]) { /* more than it names: said */
      snprintf(buf + used, cap - used, ", ...");
      break;
    }
    seen[n++] = v;
    long long m = v < 0 ? -v : v;
    int k = snprintf(buf + used, cap - used, "%sCUDA %lld.%lld%s", used ? ", " : "", m / 1000,
                     (m % 1000) / 10, v < 0 ? " (emulated)" : "");
    if (k > 0 && (size_t)k < cap - used) used += (size_t)k;
  }
}

/* "sm_80, sm_90": the architectures of the images the run loaded during capture. */
static void run_archs(const cgr_report *rep, size_t r, char *buf, size_t cap) {
  const cgr_rows *rows = &rep->rows;
  bool sm[256] = {false};
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < rows->n_evs; i++) {
    const cgl_event *e = &rows->evs[i];
    if (rows->n_runs && rows->procs[e->proc].run_index != r) continue;
    if (e->image_sm > 0 && e->image_sm < 256) sm[e->image_sm] = true;
  }
  for (int k = 0; k < 256; k++)
    if (sm[k]) {
      int n = snprintf(buf + used, cap - used, "%ssm_%d", used ? ", " : "", k);
      if (n > 0 && (size_t)n < cap - used) used += (size_t)n;
    }
}

/* What ran: per run, its command line, its drivers, and the GPU architecture
 * of the images loaded during capture (the log names no GPU). */
static void what_ran(FILE *o, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  size_t runs = rows->n_runs ? rows->n_runs : 1;
  if (!rows->n_procs) return;
  fputs("<table><tr><th>run</th><th>command</th><th>driver</th><th>GPU architecture "
        "(of the images loaded during capture)</th></tr>\n", o);
  for (size_t r = 0; r < runs; r++) {
    size_t top = rows->n_runs ? rows->runs[r].first_proc : 0;
    char cmd[1024], drivers[128], archs[128];
    run_drivers(rep, r, drivers, sizeof drivers);
    run_archs(rep, r, archs, sizeof archs);
    cgr_report_rerun_command(rep, r, CG_RUN_MODE_COUNT, cmd, sizeof cmd);
    const char *argv_part = strstr(cmd, " -- ");
    fprintf(o, "<tr><td>%zu (pid %lld)</td><td><code>", r + 1, rows->procs[top].pid);
    esc(o, argv_part ? argv_part + 4 : "?");
    fputs("</code></td><td>", o);
    esc(o, drivers[0] ? drivers : "not used");
    fputs("</td><td>", o);
    esc(o, archs[0] ? archs : "-");
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
}

static void process_driver(const cgl_process *pr, char *drv, size_t cap) {
  if (!pr->cuda)
    snprintf(drv, cap, "no CUDA");
  else if (pr->emulate_driver > 0)
    snprintf(drv, cap, "emulating CUDA %lld.%lld", pr->emulate_driver / 1000,
             (pr->emulate_driver % 1000) / 10);
  else if (pr->driver_version > 0)
    snprintf(drv, cap, "CUDA %lld.%lld", pr->driver_version / 1000,
             (pr->driver_version % 1000) / 10);
  else
    snprintf(drv, cap, "?");
}

static void processes(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fputs("<h2>Processes</h2>\n<table><tr><th>process</th><th>parent</th><th>command</th>"
        "<th>mode</th><th>driver</th><th>captures</th><th>broken</th><th>calls during capture</th>"
        "<th>served</th></tr>\n", o);
  for (size_t p = 0; p < rows->n_procs && p < MAX_ROWS; p++) {
    const cgl_process *pr = &rows->procs[p];
    const struct cgr_proc_stats *st = &a->procs[p];
    char who[256], cmd[160], drv[64];
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_process_command(pr, cmd, sizeof cmd);
    process_driver(pr, drv, sizeof drv);
    fputs("<tr><td>", o);
    esc(o, who);
    fprintf(o, "</td><td class=\"n\">%lld</td><td><code>", pr->ppid);
    esc(o, cmd);
    fputs("</code></td><td>", o);
    esc(o, or(cgl_word(&cg_run_modes, pr->mode), "?"));
    fputs("</td><td>", o);
    esc(o, drv);
    fprintf(o, "</td><td class=\"n\">%zu</td><td class=\"n%s\">%zu</td><td class=\"n\">%zu</td>"
               "<td class=\"n\">%zu</td></tr>\n",
            st->captures, st->broken ? " bad" : "", st->broken, st->calls, st->served);
  }
  fputs("</table>\n", o);
  if (rows->n_procs > MAX_ROWS)
    fprintf(o, "<p>and %zu more processes (capguard report --json lists them all)</p>\n",
            rows->n_procs - MAX_ROWS);
}

/* The processes that used CUDA and left no exit record (killed, crashed,
 * _exit, still running, cut from the log), as the text report lists them:
 * which pid, what it was, and the last thing it logged. */
static void ended_table(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fprintf(o,
          "<h2 class=\"bad\">Ended without an exit record</h2>\n<p>%zu process%s that used CUDA "
          "wrote no exit record: killed, crashed, left through _exit, still running, or cut from "
          "the log. What each did after its last line is not in the log; the signal that "
          "killed one is known when capguard run saw it kill its command.</p>\n<table><tr>"
          "<th>process</th><th>command</th><th>how it ended</th><th>captures</th>"
          "<th>calls during capture</th><th>last logged</th></tr>\n",
          a->ended_early, cg_plural_es(a->ended_early));
  size_t said = 0;
  for (size_t p = 0; p < rows->n_procs; p++) {
    if (!cgr_ended_early(&rows->procs[p]))
      continue;
    if (said++ == MAX_ROWS)
      break;
    char who[256], cmd[160], last[1024];
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_process_command(&rows->procs[p], cmd, sizeof cmd);
    cgr_report_ended_last(rep, p, last, sizeof last);
    fputs("<tr><td class=\"bad\">", o);
    esc(o, who);
    fputs("</td><td><code>", o);
    esc(o, cmd[0] ? cmd : "?");
    fputs("</code></td><td>", o);
    if (rows->procs[p].signal) { /* capguard run's "ended" record */
      char words[40];
      cgr_signal_words(rows->procs[p].signal, words, sizeof words);
      fputs("killed by ", o);
      esc(o, words);
    } else {
      fputs("not in the log", o);
    }
    fprintf(o, "</td><td class=\"n\">%zu</td><td class=\"n\">%zu</td><td>", a->procs[p].captures,
            a->procs[p].calls);
    esc(o, last);
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  if (a->ended_early > MAX_ROWS)
    fprintf(o, "<p>and %zu more (capguard report lists them all)</p>\n", a->ended_early - MAX_ROWS);
}

/* A kernel's display form, its exact symbol in the title (on hover) when they differ. */
static void kernel_name(FILE *o, const char *name) {
  char disp[CG_KERNEL_DISPLAY_MAX];
  cg_kernel_display(name, disp, sizeof disp);
  if (!strcmp(disp, name)) {
    esc(o, name);
    return;
  }
  fputs("<span title=\"", o);
  esc(o, name);
  fputs("\">", o);
  esc(o, disp);
  fputs("</span>", o);
}

static void kernel_cell(FILE *o, const cgl_event *e) {
  for (size_t k = 0; k < e->kernels->n; k++) {
    if (k) fputs("<br>", o);
    kernel_name(o, e->kernels->v[k]);
  }
}

/* What the capture's end returned and its repeats, after the why (after:
 * the cell holds words already, which a separator ends: copied as text, the
 * why must not run into "its end returned"). */
static void end_cell(FILE *o, const cgl_capture *c, bool after) {
  if (c->has_end_result && c->end_result) {
    char result[160];
    cgr_result_words(c->end_result, NULL, result, sizeof result);
    fputs(after ? "; <br>its end returned " : "its end returned ", o);
    esc(o, result);
    after = true;
  }
  if (c->repeats > 0)
    fprintf(o, "%srepeats: %lld more like one logged, not logged again", after ? "; <br>" : "",
            c->repeats);
}

static void broken_table(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fputs("<h2>Broken captures</h2>\n<table><tr><th>process</th><th>capture</th><th>began</th>"
        "<th>first offender</th><th>at</th><th>kernels</th><th>why</th></tr>\n", o);
  for (size_t b = 0; b < a->n_broken && b < MAX_ROWS; b++) {
    const cgl_capture *c = &rows->caps[a->broken[b].capture];
    char who[256];
    cgr_report_process_label(rep, c->proc, who, sizeof who);
    fputs("<tr><td>", o);
    esc(o, who);
    fprintf(o, "</td><td>%lld (", c->id);
    esc(o, or(cgl_word(&cg_capture_modes, c->mode), "?"));
    fputs(")</td><td><code>", o);
    esc(o, or(c->began, "?"));
    fputs("</code></td>", o);
    long f = a->broken[b].first_event;
    if (f < 0 || (c->by == CGL_BY_CALL && rows->evs[f].call != c->offender.call)) {
      /* no logged event of the offender: what the capture record says, or that the log does not */
      char phrase[1024];
      cgr_report_offender_phrase(rep, a->broken[b].capture, f, phrase, sizeof phrase);
      if (c->by == CGL_BY_CALL) {
        fputs("<td class=\"bad\">", o);
        esc(o, phrase);
        fputs("</td><td><code>", o);
        esc(o, or(c->offender.where, cgr_offender_at(&c->offender)));
        fputs("</code></td><td></td><td>", o);
      } else {
        fputs("<td colspan=\"3\">", o);
        esc(o, phrase);
        fputs("</td><td>", o);
      }
      end_cell(o, c, false);
      fputs("</td></tr>\n", o);
      continue;
    }
    const cgl_event *e = &rows->evs[f];
    char why[256], phrase[1024];
    cgr_why(e, why, sizeof why);
    cgr_report_offender_phrase(rep, a->broken[b].capture, f, phrase, sizeof phrase);
    fputs("<td class=\"bad\">", o);
    esc(o, phrase);
    fputs("</td><td><code>", o);
    esc(o, e->site);
    fputs("</code></td><td><code>", o);
    kernel_cell(o, e);
    fputs("</code></td><td>", o);
    esc(o, why);
    end_cell(o, c, true);
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  if (a->n_broken > MAX_ROWS)
    fprintf(o, "<p>and %zu more broken captures (capguard report --json lists them all)</p>\n",
            a->n_broken - MAX_ROWS);
}

/* Every call during capture with its details: what the tooltips say, readable. */
static void calls_table(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  if (!rows->n_evs) return;
  fputs("<h2>Calls during capture</h2>\n<table><tr><th>process</th><th>capture</th><th>call</th>"
        "<th>kind</th><th>verdict</th><th>result</th><th>at</th><th>kernels</th><th>log line</th></tr>\n", o);
  for (size_t i = 0; i < rows->n_evs && i < MAX_ROWS; i++) {
    const cgl_event *e = &rows->evs[i];
    char who[256];
    cgr_report_process_label(rep, e->proc, who, sizeof who);
    fputs("<tr><td>", o);
    esc(o, who);
    fprintf(o, "</td><td>%lld</td><td>", rows->caps[e->capture].id);
    esc(o, or(e->call, "?"));
    fputs("</td><td>", o);
    esc(o, or(cgl_word(&cg_event_kinds, e->kind), "other"));
    fprintf(o, "</td><td style=\"color:%s\">", verdict_colour(e->verdict));
    esc(o, verdict_word(e->verdict));
    char result[160];
    cgr_event_result(e, result, sizeof result);
    fputs("</td><td>", o);
    esc(o, result);
    fputs("</td><td><code>", o);
    esc(o, e->site);
    fputs("</code></td><td><code>", o);
    kernel_cell(o, e);
    fputs("</code></td><td><code>", o);
    const char *slash = strrchr(e->src_file, '/');
    esc(o, slash ? slash + 1 : e->src_file);
    fprintf(o, ":%lld</code></td></tr>\n", e->src_line);
  }
  fputs("</table>\n", o);
  if (rows->n_evs > MAX_ROWS)
    fprintf(o, "<p>and %zu more calls (all are in the log and in --json)</p>\n",
            rows->n_evs - MAX_ROWS);
  /* What the verdicts that happened mean, in the schema's words and order. */
  fputs("<p class=\"sum\">", o);
  bool first = true;
  for (unsigned v = 0; v < CG_VERDICT_COUNT; v++) {
    if (!a->verdicts[v]) continue;
    fprintf(o, "%s<strong>%s</strong>: ", first ? "" : "; ", cg_verdict_name(v));
    esc(o, cg_word_what(&cg_verdicts, v));
    first = false;
  }
  fputs("</p>\n", o);
}

/* One finding: its sentence, then each command on a line of its own. */
static void advice_item(FILE *o, const cgf_finding *x) {
  fputs("<li>", o);
  esc(o, x->sentence);
  if (x->n_commands)
    fputc(':', o);
  for (size_t k = 0; k < x->n_commands; k++) {
    if (x->commands[k].lead) {
      fputs("<br>", o);
      esc(o, x->commands[k].lead);
      fputc(':', o);
    }
    fputs("<pre class=\"cmd\"><code>", o);
    esc(o, x->commands[k].text);
    fputs("</code></pre>", o);
    if (x->commands[k].note) {
      fputc('(', o);
      esc(o, x->commands[k].note);
      fputc(')', o);
    }
  }
  fputs("</li>\n", o);
}

/* What to do: with --all over several runs, each run's advice under its run. */
static void advice_section(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  fputs("<h2 id=\"what-to-do\">What to do</h2>\n", o);
  if (!a->run_advice) {
    fputs("<ul>\n", o);
    for (size_t i = 0; i < a->advice.n; i++)
      advice_item(o, &a->advice.v[i]);
    fputs("</ul>\n", o);
    return;
  }
  for (size_t r = 0; r < a->n_runs; r++) {
    const cgl_process *top = &rep->whole.procs[rep->whole.runs[r].first_proc];
    char cmd[96];
    cgr_process_command(top, cmd, sizeof cmd);
    fprintf(o, "<h3>run %zu: pid %lld ", r + 1, top->pid);
    esc(o, cmd);
    fputs("</h3>\n<ul>\n", o);
    for (size_t i = 0; i < a->run_advice[r].n; i++)
      advice_item(o, &a->run_advice[r].v[i]);
    fputs("</ul>\n", o);
  }
}

static void findings(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  if (a->n_broken) broken_table(o, rep);
  if (a->n_kernels) {
    fputs("<h2>Kernels loaded during capture</h2>\n<table><tr><th>loads</th><th>served</th>"
          "<th>kernel</th></tr>\n", o);
    for (size_t k = 0; k < a->n_kernels; k++) {
      fprintf(o, "<tr><td class=\"n\">%zu</td><td class=\"n\">%zu</td><td><code>",
              a->kernels[k].loads, a->kernels[k].served);
      kernel_name(o, a->kernels[k].name);
      fputs("</code></td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  if (a->n_sites) {
    fputs("<h2>Call sites</h2>\n<table><tr><th>calls</th><th>site</th><th>functions</th>"
          "<th>kernels</th></tr>\n", o);
    for (size_t s = 0; s < a->n_sites; s++) {
      const cgr_site *st = &a->sites[s];
      fprintf(o, "<tr><td class=\"n\">%zu</td><td><code>", st->count);
      esc(o, st->site);
      fputs("</code></td><td>", o);
      for (size_t i = 0; i < st->n_calls; i++) {
        if (i) fputs(", ", o);
        esc(o, st->calls[i]);
      }
      fputs("</td><td><code>", o);
      for (size_t i = 0; i < st->n_kernels; i++) {
        if (i) fputs("<br>", o);
        kernel_name(o, st->kernels[i]);
      }
      fputs("</code></td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
}

int cgr_print_html(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fprintf(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
             "<title>capguard report</title>\n<style>%s</style></head><body>\n",
          CSS);
  fputs("<h1>capguard report</h1>\n<p class=\"sum\">", o);
  for (size_t i = 0; i < rows->n_files; i++) {
    fputs(i ? ", " : "logs: ", o);
    esc(o, rows->files[i]);
  }
  size_t calls = a->calls, loads = a->events[CG_EV_MODULE_LOAD],
         unloads = a->events[CG_EV_MODULE_UNLOAD];
  /* the processes that used CUDA, when some did, as the text report counts
   * them: a JIT's compiler steps (sh, gcc, as) are in the Processes table */
  size_t cuda = 0;
  for (size_t p = 0; p < rows->n_procs; p++)
    cuda += rows->procs[p].cuda;
  size_t procs = cuda ? cuda : rows->n_procs;
  fprintf(o, "<br>%zu process%s%s, %zu capture%s, <span class=\"%s\">%zu broken</span>", procs,
          cg_plural_es(procs), cuda && cuda < rows->n_procs ? " with CUDA" : "", a->captures,
          cg_plural(a->captures), a->n_broken ? "bad" : "good", a->n_broken);
  if (a->ended_early)
    fprintf(o, ", <span class=\"bad\">%zu ended without an exit record</span>", a->ended_early);
  if (a->n_stale_reads) /* silent corruption: as red as a broken capture */
    fprintf(o, ", <span class=\"bad\">%zu stale read%s</span>", a->n_stale_reads, cg_plural(a->n_stale_reads));
  fprintf(o, "; %zu call%s during capture (%zu module load%s, %zu unload%s", calls, cg_plural(calls), loads,
          cg_plural(loads), unloads, cg_plural(unloads));
  /* the other kinds of call, in the schema's words, when they happened */
  for (unsigned k = 0; k <= CG_EV_KIND_COUNT; k++)
    if (k != CG_EV_MODULE_LOAD && k != CG_EV_MODULE_UNLOAD && a->events[k])
      fprintf(o, ", %s %zu", k < CG_EV_KIND_COUNT ? cg_event_kind_name(k) : "other", a->events[k]);
  fputc(')', o);
  if (a->repeats)
    fprintf(o, "; %zu more like one logged (repeats), not logged again", a->repeats);
  if (a->n_runs > 1 && a->shown_run != SIZE_MAX)
    fprintf(o, "<br>the latest of %zu runs in the logs (capguard report --all for every run)",
            a->n_runs);
  fputs("</p>\n", o);
  if (rows->malformed) {
    fprintf(o, "<p class=\"warn\">%zu malformed line%s skipped (first: ", rows->malformed,
            cg_plural(rows->malformed));
    esc(o, rows->first_malformed);
    fputs(")</p>\n", o);
  }
  if (rows->cut_files)
    fprintf(o,
            "<p class=\"bad\">The log is cut short: the last line of %zu file%s ends without a "
            "newline (the file was truncated, or a writer was killed mid-line); counts are lower "
            "bounds.</p>\n",
            rows->cut_files, cg_plural(rows->cut_files));
  if (a->log_incomplete)
    fputs("<p class=\"bad\">The log is incomplete: a process could not write all its lines "
          "(full disk or I/O error); counts are lower bounds.</p>\n", o);
  /* the verdict (the summary above) and what to do, in the first screen: the
   * timeline and the tables are what a reader turns to after */
  advice_section(o, rep);
  cgr_print_stale_html(o, rep); /* a stale read is silent corruption: before the timeline and tables */
  what_ran(o, rep);
  fputs("<h2>Timeline</h2>\n", o);
  timeline(o, rep);
  processes(o, rep);
  if (a->ended_early)
    ended_table(o, rep);
  cgr_print_ranks_html(o, rep, esc);
  cgr_capture_time_html(o, rep, esc);
  findings(o, rep);
  cgr_print_hang_html(o, rep);
  cgr_print_request_html(o, rep);
  calls_table(o, rep);
  fputs("</body></html>\n", o);
  return ferror(o) ? -1 : 0;
}
