/* --html: one self-contained page (inline CSS and SVG, no scripts, nothing
 * fetched) with a timeline of captures per process and the events inside them,
 * then the same findings as the text report. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report_render.h"

static void esc(FILE *o, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", o); break;
    case '<': fputs("&lt;", o); break;
    case '>': fputs("&gt;", o); break;
    case '"': fputs("&quot;", o); break;
    case '\'': fputs("&#39;", o); break;
    default: fputc(*s, o);
    }
  }
}

static const char *or(const char *s, const char *dflt) { return s && *s ? s : dflt; }

static const char *verdict_colour(const char *v) {
  if (!v) return "#888";
  if (!strcmp(v, "refused")) return "#d62728";
  if (!strcmp(v, "emulated")) return "#e7298a";
  if (!strcmp(v, "allowed")) return "#ff7f0e";
  if (!strcmp(v, "served")) return "#1f77b4";
  if (!strcmp(v, "rescued")) return "#9467bd";
  if (!strcmp(v, "deferred")) return "#7f7f7f";
  return "#8c564b";
}

static const char CSS[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222}"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}h3{font-size:13px;margin:12px 0 4px;font-weight:600}"
    ".sum{color:#444}.bad{color:#c00;font-weight:600}.good{color:#080;font-weight:600}"
    ".warn{color:#a60}table{border-collapse:collapse;margin:4px 0}"
    "td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f4f4f4}td.n{text-align:right}code{font:12px ui-monospace,monospace}"
    "svg{border:1px solid #ddd;background:#fcfcfc}svg text{font:11px sans-serif;fill:#333}"
    ".legend span{display:inline-block;margin-right:14px}"
    ".sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}";

/* Time span shown by the timeline. */
typedef struct {
  long long t0, t1;
} span;

static long long cap_begin(const cgl_log *log, size_t c) {
  if (log->caps[c].begin_ns)
    return log->caps[c].begin_ns;
  for (size_t i = 0; i < log->n_evs; i++)
    if (log->evs[i].capture == c && log->evs[i].time_ns)
      return log->evs[i].time_ns;
  return 0;
}

/* The span shown for one group of processes: their captures and events. */
static span time_span(const cgl_log *log, const size_t *group_of, size_t g) {
  span s = {INT64_MAX, 0};
  for (size_t c = 0; c < log->n_caps; c++) {
    if (group_of[log->caps[c].proc] != g) continue;
    long long b = cap_begin(log, c), e = log->caps[c].end_ns;
    if (b && b < s.t0) s.t0 = b;
    if (b > s.t1) s.t1 = b;
    if (e > s.t1) s.t1 = e;
  }
  for (size_t i = 0; i < log->n_evs; i++) {
    long long t = log->evs[i].time_ns;
    if (group_of[log->evs[i].proc] != g) continue;
    if (t && t < s.t0) s.t0 = t;
    if (t > s.t1) s.t1 = t;
  }
  if (s.t0 == INT64_MAX) s.t0 = s.t1 = 0;
  if (s.t1 <= s.t0) s.t1 = s.t0 + 1000000; /* at least 1 ms */
  return s;
}

/* Everything a process did, to tell runs apart. */
static span proc_span(const cgl_log *log, size_t p) {
  span s = {log->procs[p].time_ns ? log->procs[p].time_ns : INT64_MAX, log->procs[p].time_ns};
  for (size_t c = 0; c < log->n_caps; c++) {
    if (log->caps[c].proc != p) continue;
    long long b = cap_begin(log, c), e = log->caps[c].end_ns;
    if (b && b < s.t0) s.t0 = b;
    if (b > s.t1) s.t1 = b;
    if (e > s.t1) s.t1 = e;
  }
  for (size_t i = 0; i < log->n_evs; i++) {
    long long t = log->evs[i].time_ns;
    if (log->evs[i].proc != p || !t) continue;
    if (t < s.t0) s.t0 = t;
    if (t > s.t1) s.t1 = t;
  }
  if (s.t0 == INT64_MAX) s.t0 = s.t1;
  return s;
}

/* Runs: processes of one log whose lifetimes overlap (a parent spans its
 * workers) share a timeline; a later run appended to the same log, or another
 * log, gets its own, so that hours between runs do not squash each. Returns
 * the number of groups; group_of[p] is each process's. */
static size_t group_runs(const cgl_log *log, size_t *group_of) {
  size_t groups = 0;
  span *g = calloc(log->n_procs + 1, sizeof *g);
  size_t *gfile = calloc(log->n_procs + 1, sizeof *gfile);
  if (!g || !gfile) {
    for (size_t p = 0; p < log->n_procs; p++) group_of[p] = 0;
    free(g);
    free(gfile);
    return 1;
  }
  const long long slack = 1000000000LL; /* 1 s */
  for (size_t p = 0; p < log->n_procs; p++) {
    span ps = proc_span(log, p);
    size_t k = 0;
    while (k < groups && !(gfile[k] == log->procs[p].file && ps.t0 <= g[k].t1 + slack &&
                           ps.t1 + slack >= g[k].t0))
      k++;
    if (k == groups) {
      g[groups] = ps;
      gfile[groups++] = log->procs[p].file;
    } else {
      if (ps.t0 < g[k].t0) g[k].t0 = ps.t0;
      if (ps.t1 > g[k].t1) g[k].t1 = ps.t1;
    }
    group_of[p] = k;
  }
  free(g);
  free(gfile);
  return groups;
}

/* Axis label in a unit that suits the span. */
static void tick_label(char *buf, size_t cap, double ns, double span_ns) {
  if (span_ns < 2e6)
    snprintf(buf, cap, "%.0f \u00b5s", ns / 1e3);
  else if (span_ns < 2e10)
    snprintf(buf, cap, "%.*f ms", span_ns < 2e7 ? 2 : span_ns < 2e8 ? 1 : 0, ns / 1e6);
  else
    snprintf(buf, cap, "%.*f s", span_ns < 2e11 ? 1 : 0, ns / 1e9);
}

enum { LABEL_W = 190, PLOT_W = 900, LANE_H = 22, ROW_PAD = 8, AXIS_H = 28 };

static double xpos(span s, long long t) {
  if (t < s.t0) t = s.t0;
  return LABEL_W + (double)(t - s.t0) * PLOT_W / (double)(s.t1 - s.t0);
}

/* Overlapping captures of a process (several threads) get separate lanes. */
static size_t assign_lanes(const cgl_log *log, size_t proc, span s, size_t *lane_of) {
  long long lane_end[16] = {0};
  size_t lanes = 1;
  for (size_t c = 0; c < log->n_caps; c++) {
    if (log->caps[c].proc != proc) continue;
    long long b = cap_begin(log, c), e = log->caps[c].end_ns ? log->caps[c].end_ns : s.t1;
    size_t l = 0;
    while (l < 15 && lane_end[l] && lane_end[l] > b) l++;
    lane_end[l] = e > b ? e : b + 1;
    lane_of[c] = l;
    if (l + 1 > lanes) lanes = l + 1;
  }
  return lanes;
}

static void panel(FILE *o, const cgr_analysis *a, const size_t *group_of, size_t g,
                  size_t *lane_of, size_t *lanes) {
  const cgl_log *log = a->log;
  span s = time_span(log, group_of, g);
  size_t height = AXIS_H;
  for (size_t p = 0; p < log->n_procs; p++) {
    if (group_of[p] != g) continue;
    lanes[p] = assign_lanes(log, p, s, lane_of);
    height += lanes[p] * LANE_H + ROW_PAD;
  }
  fprintf(o, "<svg width=\"%d\" height=\"%zu\" role=\"img\">\n",
          LABEL_W + PLOT_W + 20, height + 10);
  /* axis: ticks in milliseconds from the first thing seen */
  double span_ns = (double)(s.t1 - s.t0);
  for (int t = 0; t <= 10; t++) {
    double x = LABEL_W + PLOT_W * t / 10.0;
    char label[32];
    tick_label(label, sizeof label, span_ns * t / 10.0, span_ns);
    fprintf(o, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%zu\" stroke=\"#eee\"/>", x, AXIS_H - 8,
            x, height);
    fprintf(o, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>\n", x, AXIS_H - 12,
            t == 10 ? "end" : "middle", label);
  }
  size_t y = AXIS_H;
  for (size_t p = 0; p < log->n_procs; p++) {
    if (group_of[p] != g) continue;
    char who[256];
    cgr_process_label(a, p, who, sizeof who);
    const cgl_process *pr = &log->procs[p];
    size_t row_h = lanes[p] * LANE_H;
    fprintf(o, "<text x=\"4\" y=\"%zu\"><title>", y + LANE_H / 2 + 4);
    for (size_t i = 0; i < pr->argc; i++) {
      esc(o, pr->argv[i]);
      fputc(' ', o);
    }
    fputs("</title>", o);
    esc(o, who);
    if (pr->argc) {
      const char *a0 = strrchr(pr->argv[0], '/');
      fputs(" ", o);
      esc(o, a0 ? a0 + 1 : pr->argv[0]);
    }
    fputs("</text>\n", o);
    fprintf(o, "<line x1=\"0\" y1=\"%zu\" x2=\"%d\" y2=\"%zu\" stroke=\"#ddd\"/>\n",
            y + row_h + ROW_PAD / 2, LABEL_W + PLOT_W + 20, y + row_h + ROW_PAD / 2);
    for (size_t c = 0; c < log->n_caps; c++) {
      const cgl_capture *cp = &log->caps[c];
      if (cp->proc != p) continue;
      long long b = cap_begin(log, c), e = cp->end_ns ? cp->end_ns : s.t1;
      double x0 = xpos(s, b), x1 = xpos(s, e);
      if (x1 - x0 < 3) x1 = x0 + 3;
      bool broken = cgl_capture_broken(log, c);
      const char *fill = broken ? "#f4b6b6" : (cp->end_ns ? "#b9e3b9" : "#ddd");
      const char *stroke = broken ? "#c00" : (cp->end_ns ? "#3a3" : "#999");
      fprintf(o,
              "<rect x=\"%.1f\" y=\"%zu\" width=\"%.1f\" height=\"%d\" rx=\"3\" fill=\"%s\" "
              "stroke=\"%s\"><title>capture %lld, ",
              x0, y + lane_of[c] * LANE_H + 3, x1 - x0, LANE_H - 6, fill, stroke, cp->id);
      esc(o, or(cp->status, "?"));
      fputs(", ", o);
      esc(o, or(cp->mode, "?"));
      fputs(", stream ", o);
      esc(o, or(cp->stream, "?"));
      fprintf(o, ", %lld event(s), began ", cp->events);
      esc(o, or(cp->began, "where unknown"));
      fputs("</title></rect>\n", o);
    }
    for (size_t i = 0; i < log->n_evs; i++) {
      const cgl_event *e = &log->evs[i];
      if (e->proc != p) continue;
      double x = xpos(s, e->time_ns ? e->time_ns : cap_begin(log, e->capture));
      size_t cy = y + lane_of[e->capture] * LANE_H + LANE_H / 2;
      char site[512];
      cgl_event_site(e, site, sizeof site);
      fprintf(o,
              "<path d=\"M%.1f %zu l5 5 l-5 5 l-5 -5 z\" fill=\"%s\" stroke=\"#fff\"><title>",
              x, cy - 5, verdict_colour(e->verdict));
      esc(o, or(e->call, "?"));
      fputs(" (", o);
      esc(o, or(e->event, "?"));
      fputs(", ", o);
      esc(o, or(e->verdict, "?"));
      fputs(") at ", o);
      esc(o, site);
      for (size_t k = 0; k < e->kernels->n; k++) {
        fputs(k ? ", " : "; kernels: ", o);
        esc(o, e->kernels->v[k]);
      }
      fputs("</title></path>\n", o);
    }
    y += row_h + ROW_PAD;
  }
  fputs("</svg>\n", o);
}

static void timeline(FILE *o, const cgr_analysis *a) {
  const cgl_log *log = a->log;
  size_t *lane_of = calloc(log->n_caps + 1, sizeof *lane_of);
  size_t *lanes = calloc(log->n_procs + 1, sizeof *lanes);
  size_t *group_of = calloc(log->n_procs + 1, sizeof *group_of);
  if (!lane_of || !lanes || !group_of) {
    free(lane_of);
    free(lanes);
    free(group_of);
    fputs("<p>(timeline left out: out of memory)</p>\n", o);
    return;
  }
  size_t groups = group_runs(log, group_of);
  for (size_t g = 0; g < groups; g++) {
    size_t first = 0;
    while (first < log->n_procs && group_of[first] != g) first++;
    if (groups > 1 && first < log->n_procs) {
      fprintf(o, "<h3>run %zu: ", g + 1);
      esc(o, log->files[log->procs[first].file]);
      fputs("</h3>\n", o);
    }
    panel(o, a, group_of, g, lane_of, lanes);
  }
  free(group_of);
  fputs("<p class=\"legend\">", o);
  static const char *const verdicts[] = {"refused", "emulated", "allowed", "served", "rescued",
                                         "deferred", "failed"};
  for (size_t i = 0; i < sizeof verdicts / sizeof *verdicts; i++)
    fprintf(o, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>",
            verdict_colour(verdicts[i]), verdicts[i]);
  fputs("<span><i class=\"sw\" style=\"background:#b9e3b9\"></i>capture ended</span>"
        "<span><i class=\"sw\" style=\"background:#f4b6b6\"></i>capture broken</span>"
        "<span><i class=\"sw\" style=\"background:#ddd\"></i>still open at exit</span></p>\n",
        o);
  free(lane_of);
  free(lanes);
}

static void findings(FILE *o, const cgr_analysis *a) {
  const cgl_log *log = a->log;
  if (a->n_broken) {
    fputs("<h2>Broken captures</h2>\n<table><tr><th>process</th><th>capture</th><th>began</th>"
          "<th>first call that broke it</th><th>at</th><th>kernels</th></tr>\n",
          o);
    for (size_t b = 0; b < a->n_broken; b++) {
      const cgl_capture *c = &log->caps[a->broken[b].capture];
      char who[256];
      cgr_process_label(a, c->proc, who, sizeof who);
      fputs("<tr><td>", o);
      esc(o, who);
      fprintf(o, "</td><td>%lld (", c->id);
      esc(o, or(c->status, "?"));
      fputs(")</td><td><code>", o);
      esc(o, or(c->began, "?"));
      fputs("</code></td>", o);
      long f = a->broken[b].first_event;
      if (f < 0) {
        fputs("<td colspan=\"3\">no forbidden call logged</td></tr>\n", o);
        continue;
      }
      const cgl_event *e = &log->evs[f];
      char site[512];
      cgl_event_site(e, site, sizeof site);
      fputs("<td class=\"bad\">", o);
      esc(o, or(e->call, "?"));
      fputs(" (", o);
      esc(o, or(e->verdict, "?"));
      fputs(")</td><td><code>", o);
      esc(o, site);
      fputs("</code></td><td><code>", o);
      for (size_t k = 0; k < e->kernels->n; k++) {
        if (k) fputs("<br>", o);
        esc(o, e->kernels->v[k]);
      }
      fputs("</code></td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  if (a->n_kernels) {
    fputs("<h2>Kernels loaded during capture</h2>\n<table><tr><th>loads</th><th>served</th>"
          "<th>kernel</th></tr>\n",
          o);
    for (size_t k = 0; k < a->n_kernels; k++) {
      fprintf(o, "<tr><td class=\"n\">%zu</td><td class=\"n\">%zu</td><td><code>",
              a->kernels[k].loads, a->kernels[k].served);
      esc(o, a->kernels[k].name);
      fputs("</code></td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  if (a->n_sites) {
    fputs("<h2>Call sites</h2>\n<table><tr><th>calls</th><th>site</th><th>calls</th>"
          "<th>kernels</th></tr>\n",
          o);
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
        esc(o, st->kernels[i]);
      }
      fputs("</code></td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  fputs("<h2>What to do</h2>\n<ul>\n", o);
  for (size_t i = 0; i < a->n_advice; i++) {
    fputs("<li>", o);
    esc(o, a->advice[i]);
    fputs("</li>\n", o);
  }
  fputs("</ul>\n", o);
}

int cgr_print_html(FILE *o, const cgr_analysis *a) {
  const cgl_log *log = a->log;
  fprintf(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
             "<title>capguard report</title>\n<style>%s</style></head><body>\n",
          CSS);
  fputs("<h1>capguard report</h1>\n<p class=\"sum\">", o);
  for (size_t i = 0; i < log->n_files; i++) {
    fputs(i ? ", " : "logs: ", o);
    esc(o, log->files[i]);
  }
  fprintf(o, "<br>%zu process%s, %zu capture%s, <span class=\"%s\">%zu broken</span>; "
             "%zu module load%s and %zu unload%s during capture</p>\n",
          log->n_procs, log->n_procs == 1 ? "" : "es", a->captures, a->captures == 1 ? "" : "s",
          a->n_broken ? "bad" : "good", a->n_broken, a->loads, a->loads == 1 ? "" : "s",
          a->unloads, a->unloads == 1 ? "" : "s");
  if (log->malformed) {
    fprintf(o, "<p class=\"warn\">%zu malformed line%s skipped (first: ", log->malformed,
            log->malformed == 1 ? "" : "s");
    esc(o, log->first_malformed);
    fputs(")</p>\n", o);
  }
  fputs("<h2>Timeline</h2>\n", o);
  timeline(o, a);
  findings(o, a);
  fputs("</body></html>\n", o);
  return ferror(o) ? -1 : 0;
}
