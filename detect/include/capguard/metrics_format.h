/* A process's figures in the Prometheus text exposition format, as
 * node_exporter's textfile collector reads it (docs/fleet.md): counters of
 * captures, loads during capture, refusals and escapes, and the seconds spent
 * in capture, every series labelled with who the process is. Pure
 * formatting: no I/O, no allocation. */
#ifndef CAPGUARD_METRICS_FORMAT_H
#define CAPGUARD_METRICS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capguard/event.h"

/* Refusals of one driver call. */
typedef struct {
  const char *call;
  uint64_t n;
} cg_metrics_call;

/* The priming file as this process found it: whether the shipped cache can
 * serve here (docs/fleet.md, "The kernel cache for a fleet"). */
typedef struct {
  bool read;                /* a priming file was read (or refused whole) */
  uint64_t images, usable;  /* images in the file; those that fit this GPU */
  uint64_t served;          /* loads during capture served from it */
  const char *cannot_serve; /* "arch", "format", "program", or NULL */
} cg_metrics_prime;

typedef struct {
  const cg_summary *sum;                /* captures, verdicts (escapes), capture time, rank */
  uint64_t loads[CG_VERDICT_COUNT];     /* module and library loads during capture, per verdict */
  const cg_metrics_call *refusals;      /* per call, refused by the driver or by capguard */
  size_t n_refusals;
  /* the labels: NULL or "" leaves one out */
  const char *host, *program, *mode;
  int driver_version;                   /* 0: unknown */
  unsigned sm;                          /* the GPU's architecture, 0: unknown */
  cg_metrics_prime prime;
  uint64_t stale_reads;                 /* stale reads the stale-pointer check named (docs/stale.md) */
} cg_metrics;

/* Writes at most cap bytes including the NUL; returns the length the whole
 * text needs (snprintf's contract). */
size_t cg_metrics_format(const cg_metrics *m, char *buf, size_t cap);

#endif
