/* The page's timeline: a panel per run of every process's captures, the calls inside them,
 * loads on the request path and stale reads. Linear in the log: captures and calls are bucketed by
 * process once; the drawing stops at a fixed number of shapes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "html_cells.h"
#include "html_text.h"
#include "kernel_display.h"
#include "plural.h"
#include "process_command.h"

enum { MAX_SHAPES = 4000 };

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }
static const char * or (const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* The capture's state in the page's one vocabulary. */
static const char *capture_word(const cgr_report *rep, size_t c) {
  const cgr_rows *rows = &rep->rows;
  if (cgr_report_capture_broken(rep, c))
    return "broken";
  if (rows->caps[c].status == CG_CAPTURE_ENDED)
    return "ended";
  return "open at exit";
}

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
  if (t < s.t0)
    t = s.t0;
  if (t > s.t1)
    t = s.t1;
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
  if (!b->cap_start || !b->ev_start || !b->caps || !b->evs)
    return false;
  for (size_t c = 0; c < rows->n_caps; c++)
    b->cap_start[rows->caps[c].proc + 2]++;
  for (size_t i = 0; i < rows->n_evs; i++)
    b->ev_start[rows->evs[i].proc + 2]++;
  for (size_t p = 2; p < np + 2; p++) {
    b->cap_start[p] += b->cap_start[p - 1];
    b->ev_start[p] += b->ev_start[p - 1];
  }
  for (size_t c = 0; c < rows->n_caps; c++)
    b->caps[b->cap_start[rows->caps[c].proc + 1]++] = c;
  for (size_t i = 0; i < rows->n_evs; i++)
    b->evs[b->ev_start[rows->evs[i].proc + 1]++] = i;
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
    if (pr->run_index != run)
      continue;
    long long a = clamp_t(pr->first_ns), z = clamp_t(pr->last_ns);
    if (a && a < s.t0)
      s.t0 = a;
    if (z > s.t1)
      s.t1 = z;
  }
  if (s.t0 == INT64_MAX)
    s.t0 = s.t1;
  if (s.t1 <= s.t0)
    s.t1 = s.t0 + 1000000; /* at least 1 ms; t0 <= 2^62: no overflow */
  return s;
}

/* Overlapping captures of a process (several threads) get separate lanes. */
static size_t assign_lanes(const cgr_report *rep, const buckets *b, size_t proc, span s, size_t *lane_of) {
  const cgr_rows *rows = &rep->rows;
  long long lane_end[MAX_LANES] = {0};
  size_t lanes = 1;
  for (size_t k = b->cap_start[proc]; k < b->cap_start[proc + 1]; k++) {
    size_t c = b->caps[k];
    long long bg = cap_begin(rep, c), e = rows->caps[c].end_ns ? clamp_t(rows->caps[c].end_ns) : s.t1;
    size_t l = 0;
    while (l < MAX_LANES - 1 && lane_end[l] && lane_end[l] > bg)
      l++;
    lane_end[l] = e > bg ? e : bg + 1;
    lane_of[c] = l;
    if (l + 1 > lanes)
      lanes = l + 1;
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
  if (sp)
    *sp = '\0';
  if (strlen(cmd) > 16)
    memcpy(cmd + 13, "...", 4);
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
    fprintf(o, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%zu\" stroke=\"#eee\"/>", x, AXIS_H - 8, x,
            height);
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
  if (x1 - x0 < 3)
    x1 = x0 + 3;
  const char *word = capture_word(rep, c);
  bool broken = word[0] == 'b', ended = word[0] == 'e';
  fprintf(o,
          "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%d\" rx=\"3\" fill=\"%s\" "
          "stroke=\"%s\"><title>capture %lld, %s, ",
          x0, y, x1 - x0, LANE_H - 6,
          broken  ? "#f4b6b6"
          : ended ? "#b9e3b9"
                  : "#ddd",
          broken  ? "#c00"
          : ended ? "#3a3"
                  : "#999",
          cp->id, word);
  esc(o, or (cgl_word(&cg_capture_modes, cp->mode), "?"));
  fputs(", stream ", o);
  esc(o, or (cp->stream, "?"));
  fprintf(o, ", %lld call(s) during it, began ", cp->events);
  esc(o, or (cp->began, "where unknown"));
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
  fprintf(o, "<path d=\"M%.1f %zu l5 5 l-5 5 l-5 -5 z\" fill=\"%s\" stroke=\"#fff\"><title>", x, cy - 5,
          cgr_html_verdict_colour(e->verdict));
  esc(o, or (e->call, "?"));
  fputs(" (", o);
  esc(o, or (cgl_word(&cg_event_kinds, e->kind), "?"));
  fputs(", ", o);
  esc(o, cgr_html_verdict_word(e->verdict));
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
  fprintf(o, "<path d=\"M%.1f %zu l6 10 l-12 0 z\" fill=\"" REQUEST_COLOUR "\" stroke=\"#fff\"><title>", x,
          cy - 5);
  esc(o, or (q->call, "?"));
  fprintf(o, " on the request path, %s after serving began: %s%s at ", after, took,
          q->served ? " (served)" : "");
  esc(o, q->python_top ? q->python_top : q->site);
  kernels_title(o, q->kernels);
  fputs("</title></path>\n", o);
}

/* A stale read (docs/stale.md): a red cross on its process's first lane, at
 * the free or the launch that named it. */
static void stale_marker(FILE *o, const cgl_stale *st, span s, size_t cy) {
  double x = xpos(s, st->time_ns);
  fprintf(o, "<path d=\"M%.1f %zu l10 10 m0 -10 l-10 10\" stroke=\"%s\" stroke-width=\"3\"><title>", x - 5,
          cy - 5, cgr_html_verdict_colour(CG_VERDICT_STALE));
  esc(o, or (st->call, "?"));
  fputs(st->kind == CG_EV_STALE_LAUNCH ? ": a replay of memory freed since its capture, graph exec "
                                       : ": a free of memory a live graph exec reads, graph exec ",
        o);
  esc(o, or (st->exec, "?"));
  fputs(" (stale read) at ", o);
  esc(o, st->python_top ? st->python_top : or (st->site, "?"));
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
    if (!timeline_row(rep, p, run))
      continue;
    lanes[p] = assign_lanes(rep, b, p, s, lane_of);
    height += lanes[p] * LANE_H + ROW_PAD;
  }
  /* viewBox and width 100%: the timeline scales to the page, wide or narrow */
  fprintf(o, "<svg viewBox=\"0 0 %d %zu\" role=\"img\">\n", LABEL_W + PLOT_W + 20, height + 10);
  axis(o, s, height);
  size_t y = AXIS_H;
  for (size_t p = 0; p < rows->n_procs; p++) {
    if (!timeline_row(rep, p, run))
      continue;
    size_t row_h = lanes[p] * LANE_H;
    process_label(o, rep, p, y);
    fprintf(o, "<line x1=\"0\" y1=\"%zu\" x2=\"%d\" y2=\"%zu\" stroke=\"#ddd\"/>\n", y + row_h + ROW_PAD / 2,
            LABEL_W + PLOT_W + 20, y + row_h + ROW_PAD / 2);
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
              cgr_html_verdict_colour(v), cg_verdict_name(v));
  for (size_t i = 0; i < rows->n_reqs; i++)
    if (rep->request_counts[i]) {
      fputs("<span><i class=\"sw\" style=\"background:" REQUEST_COLOUR
            "\"></i>load on the request path</span>",
            o);
      break;
    }
  if (rows->n_stale)
    fprintf(o,
            "<span><i class=\"sw\" style=\"background:%s\"></i>stale read (a free or replay of memory a "
            "live graph reads)</span>",
            cgr_html_verdict_colour(CG_VERDICT_STALE));
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
      fprintf(o,
              "<p class=\"warn\">The timeline stops after %d captures and calls; "
              "capguard report --trace FILE writes them all for Perfetto.</p>\n",
              MAX_SHAPES);
    legend(o, rep);
  }
  unbucket(&b);
  free(lane_of);
  free(lanes);
}

void cgr_timeline_html(FILE *o, const cgr_report *rep) {
  fputs("<h2>Timeline</h2>\n", o);
  timeline(o, rep);
}
