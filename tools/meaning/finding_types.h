/* A finding as the findings table (findings.c) hands it out: the types
 * alone, for the analysis that keeps them and the renderers that print them. */
#ifndef CAPGUARD_FINDING_TYPES_H
#define CAPGUARD_FINDING_TYPES_H

#include <stdbool.h>
#include <stddef.h>

/* One command to paste: "lead: text". sep joins it to what came before on one
 * line (cgf_line); note follows it (words, never part of the command). */
typedef struct {
  const char *sep, *lead, *note;
  char *text;
} cgf_command;

typedef struct {
  const char *key;   /* the row's stable name ("warm-up"), JSON's "finding" */
  char *sentence;
  cgf_command commands[3];
  size_t n_commands;
  bool fails;        /* learn/check: the verdict is a failure (exit status 1) */
  bool lists_loads;  /* check: the loads that reached the driver follow the sentence */
  size_t emphasis;   /* a terminal shows this many leading bytes of the sentence in bold */
} cgf_finding;

typedef struct {
  cgf_finding *v;
  size_t n;
} cgf_list;

#endif
