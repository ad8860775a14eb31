/* A process's figures in the Prometheus text exposition format, as
 * node_exporter's textfile collector reads it (docs/fleet.md): counters of
 * captures, loads during capture, refusals and escapes, and the seconds spent
 * in capture, every series labelled with who the process is. Pure
 * formatting: no I/O, no allocation. */
#ifndef CAPGUARD_METRICS_FORMAT_H
#define CAPGUARD_METRICS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "capguard/event.h"

/* Refusals of one driver call. */
typedef struct {
  const char *call;
  uint64_t n;
} cg_metrics_call;

typedef struct {
  const cg_summary *sum;                /* captures, verdicts (escapes), capture time, rank */
  uint64_t loads[CG_VERDICT_COUNT];     /* module and library loads during capture, per verdict */
  const cg_metrics_call *refusals;      /* per call, refused by the driver or by capguard */
  size_t n_refusals;
  /* the labels: NULL or "" leaves one out */
  const char *host, *program, *mode;
  int driver_version;                   /* 0: unknown */
  unsigned sm;                          /* the GPU's architecture, 0: unknown */
} cg_metrics;

/* Writes at most cap bytes including the NUL; returns the length the whole
 * text needs (snprintf's contract). */
size_t cg_metrics_format(const cg_metrics *m, char *buf, size_t cap);

#endif
