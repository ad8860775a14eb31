#include "run_advice.h"

#include <string.h>

#include "findings.h"

void cgr_run_advise(const cgr_analysis *a, cg_run_mode mode, const char *incomplete, cgr_run_advice *out) {
  memset(out, 0, sizeof *out);
  /* The lines after the broken captures say facts that hold in any mode. */
  cgf_facts said = {.a = a};
  cgf_collect(&said, CGF_SAID, false, &out->said);
  cgf_facts facts = {.a = a, .mode = mode, .incomplete = incomplete};
  cgf_collect(&facts, CGF_NEXT, true, &out->next);
  cgf_collect(&facts, CGF_FASTER, false, &out->faster);
  cgf_collect(&facts, CGF_NOTE, false, &out->note);
}

void cgr_run_advice_free(cgr_run_advice *r) {
  cgf_list_free(&r->said);
  cgf_list_free(&r->next);
  cgf_list_free(&r->faster);
  cgf_list_free(&r->note);
}
