#include "load_facts.h"

#include <stdio.h>
#include <string.h>

#include "offender.h"

static void processes(const cgl_log *log, cgr_load_facts *f) {
  for (size_t p = 0; p < log->n_procs; p++) {
    const cgl_process *pr = &log->procs[p];
    f->procs += pr->cuda; /* processes that only started the shim did not use the driver */
    long long v = cgl_process_num(pr, CGL_PR_EMULATE_DRIVER) ? cgl_process_num(pr, CGL_PR_EMULATE_DRIVER)
                                                             : cgl_process_num(pr, CGL_PR_DRIVER_VERSION);
    if (cgl_process_num(pr, CGL_PR_DRIVER_VERSION))
      f->driver = cgl_process_num(pr, CGL_PR_DRIVER_VERSION);
    if (cgl_process_rare(pr)->device_sm)
      f->device_sm = cgl_process_rare(pr)->device_sm;
    if (v > 0 && v < CGR_FIRST_DRIVER_ALLOWING_LOADS)
      f->old_driver = v;
  }
}

/* The first load the driver failed, in words. */
static void first_failed(const cgl_log *log, const cgl_event *e, cgr_load_facts *f) {
  char result[160], site[512], arch[96] = "";
  cgr_event_result(e, result, sizeof result);
  cgl_event_site(e, site, sizeof site);
  long long gpu = cgl_process_rare(&log->procs[e->proc])->device_sm;
  if (cgl_event_num(e, CGL_EV_IMAGE_SM) > 0 && gpu > 0 && gpu != cgl_event_num(e, CGL_EV_IMAGE_SM))
    snprintf(arch, sizeof arch, "; its image is built for sm_%lld, this GPU is sm_%lld",
             cgl_event_num(e, CGL_EV_IMAGE_SM), gpu);
  snprintf(f->first_failed, sizeof f->first_failed, "%s, CUresult %s, at %s%s", e->call ? e->call : "?",
           result, site, arch);
}

void cgr_load_facts_of(const cgl_log *log, cgr_load_facts *f) {
  memset(f, 0, sizeof *f);
  processes(log, f);
  for (size_t i = 0; i < log->n_evs; i++) {
    const cgl_event *e = &log->evs[i];
    if (e->kind != CG_EV_MODULE_LOAD)
      continue;
    f->loads++;
    if (e->verdict == CG_VERDICT_SERVED) {
      f->served++;
      continue;
    }
    f->refused += cg_verdict_breaks(e->verdict);
    if (e->with_options) {
      f->foreign++;
      f->foreign_name = cgl_event_rare(e)->options_foreign;
    }
    if (cgl_event_rare(e)->options_differ) {
      f->differ++;
      f->differ_how = cgl_event_rare(e)->options_differ;
    }
    if (e->verdict == CG_VERDICT_FAILED && !f->failed++)
      first_failed(log, e, f);
    long long v = cgl_event_num(e, CGL_EV_EMULATE_DRIVER) ? cgl_event_num(e, CGL_EV_EMULATE_DRIVER)
                                                          : cgl_event_num(e, CGL_EV_DRIVER_VERSION);
    if (v > 0 && v < CGR_FIRST_DRIVER_ALLOWING_LOADS)
      f->old_driver = v;
  }
}
