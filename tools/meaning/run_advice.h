/* What the findings table says to capguard run's closing summary, asked
 * once with every fact the run has (its analysis, the mode it ran in, why
 * its log may hold less): the summary renders the lists and asks nothing
 * more, as the report's renderers take the analysis's advice. */
#ifndef CAPGUARD_RUN_ADVICE_H
#define CAPGUARD_RUN_ADVICE_H

#include "analysis_types.h"
#include "finding_types.h"

typedef struct {
  cgf_list said;   /* CGF_SAID: each on a line of its own after the broken captures */
  cgf_list next;   /* CGF_NEXT: the first row that holds */
  cgf_list faster; /* CGF_FASTER */
  cgf_list note;   /* CGF_NOTE */
} cgr_run_advice;

/* incomplete: why the log may hold less ("" when it does not). */
void cgr_run_advise(const cgr_analysis *a, cg_run_mode mode, const char *incomplete, cgr_run_advice *out);
void cgr_run_advice_free(cgr_run_advice *r);

#endif
