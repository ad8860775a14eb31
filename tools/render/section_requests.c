#include "sections.h"
#include "capguard/log_keys.h"

#include "capture_totals.h"
#include "html_text.h"
#include "kernel_display.h"
#include "log_pool.h"
#include "request_path.h"

/* The kernels of a load, as a person reads them. */
static void kernels_text(const cgl_request *q, char *buf, size_t cap) {
  char disp[CG_KERNEL_DISPLAY_MAX];
  size_t used = 0;
  buf[0] = 0;
  for (size_t k = 0; k < q->kernels->n && k < 3 && used < cap; k++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", k ? ", " : "",
                             cg_kernel_display(q->kernels->v[k], disp, sizeof disp));
  if (!q->kernels->n)
    snprintf(buf, cap, "(unnamed)");
}

void cgr_requests_html(FILE *o, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  bool any = false;
  for (size_t i = 0; i < rows->n_reqs; i++) {
    if (!rep->request_counts[i])
      continue;
    if (!any)
      fputs("<h2>Loads on the request path</h2>\n<table><tr><th>pid</th><th>rank</th><th>after serving "
            "began</th>"
            "<th>load call</th><th>call</th><th>kernels</th><th>where</th></tr>\n",
            o);
    any = true;
    const cgl_request *q = &rows->reqs[i];
    char after[32], took[32], kernels[512];
    cgr_duration(q->after_ns, after, sizeof after);
    cgr_duration(q->load_ns, took, sizeof took);
    kernels_text(q, kernels, sizeof kernels);
    const cgl_process *pr = &rows->procs[q->proc];
    fprintf(o, "<tr><td>%lld</td><td>", pr->pid);
    if (pr->rank_known)
      fprintf(o, "%lld", cgl_process_num(pr, CGL_PR_RANK));
    else
      fputs("-", o);
    fprintf(o, "</td><td>%s</td><td>%s%s</td><td>", after, took, q->served ? " (served)" : "");
    cgr_html_text(o, q->call);
    fputs("</td><td>", o);
    cgr_html_text(o, kernels);
    if (q->framework) {
      fputs(" (", o);
      cgr_html_text(o, q->framework);
      fputs(")", o);
    }
    fputs("</td><td>", o);
    cgr_html_text(o, q->python_top ? q->python_top : q->site);
    fputs("</td></tr>\n", o);
  }
  if (any)
    fputs("</table>\n", o);
}

void cgr_requests_trace(json_t *evs, const cgr_report *rep, long long t0) {
  const cgr_rows *rows = &rep->rows;
  for (size_t i = 0; i < rows->n_reqs; i++) {
    if (!rep->request_counts[i])
      continue;
    const cgl_request *q = &rows->reqs[i];
    long long begin = q->time_ns - q->load_ns; /* the event is written as the load returns */
    double ts = cgr_trace_us(begin, t0);
    char kernels[512];
    kernels_text(q, kernels, sizeof kernels);
    json_array_append_new(evs, json_pack("{s:s, s:s, s:o, s:f, s:f, s:I, s:I, s:{s:o, s:o, s:b, s:I}}", "ph",
                                         "X", "cat", "request-path-load", "name", cgl_json_text(q->call),
                                         "ts", ts, "dur", (double)q->load_ns / 1000.0, "pid",
                                         (json_int_t)rows->procs[q->proc].pid, "tid", (json_int_t)0, "args",
                                         CG_KEY_KERNELS, cgl_json_text(kernels), "site",
                                         cgl_json_text(q->python_top ? q->python_top : q->site), "served",
                                         q->served, CG_KEY_AFTER_SERVING_NS, (json_int_t)q->after_ns));
  }
}
