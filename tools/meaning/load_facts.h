/* A run's loads during capture, as prime learn and prime check count them:
 * how many, served from the priming file, refused, and why the others could
 * not be recorded; the driver and GPU its processes saw. */
#ifndef CAPGUARD_LOAD_FACTS_H
#define CAPGUARD_LOAD_FACTS_H

#include <stddef.h>

#include "log_reader.h"

/* The first driver that allows module loads during capture (12.3). */
#define CGR_FIRST_DRIVER_ALLOWING_LOADS 12030

typedef struct {
  size_t procs, loads, served, refused; /* procs: processes that used CUDA */
  size_t failed;                        /* loads the driver failed: not recorded */
  size_t foreign;                       /* loads with an option capguard cannot reproduce: not recorded */
  const char *foreign_name;             /* that option */
  size_t differ;                        /* loads of recorded bytes with other options */
  const char *differ_how;
  char first_failed[768]; /* the first of them in words */
  long long old_driver;   /* a driver (or emulation) before 12.3, 0 if none */
  long long driver;       /* the driver the processes saw */
  long long device_sm;    /* the GPU's architecture, 0 if unknown */
} cgr_load_facts;

void cgr_load_facts_of(const cgl_log *log, cgr_load_facts *f);

#endif
