/* capguard's environment variables, one table for the command: what each
 * takes, checked the way the shim parses it (shim/base/config.c, through
 * capguard/env_value.h and the other shared parsers). capguard run refuses a
 * value the shim would not take, before the command starts; capguard doctor
 * says each one. The cli-env-agree test holds the shim's list and this
 * table to the same variables and the same verdicts. */
#ifndef CAPGUARD_ENV_TABLE_H
#define CAPGUARD_ENV_TABLE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  const char *name;    /* "CAPGUARD_MODE" (capguard run's option that sets it: its row in
                          tools/cmd/run_options.c names the variable) */
  /* NULL: any value; else 0, or -1 with what is wrong ("is not a mode: guard, report or off") */
  int (*check)(const char *value, char *why, size_t cap);
} cg_env_var;

extern const cg_env_var cg_env_vars[];
extern const size_t cg_env_n_vars;

/* "CAPGUARD_MODE=gaurd is not a mode: guard, report or off" for row's value
 * in the environment: 0 when it is unset or valid, else -1 and the line. */
int cg_env_bad(const cg_env_var *row, char *line, size_t cap);

/* The first CAPGUARD_* name in the environment at or after *at (an index
 * into environ, moved past it) that neither the shim nor the command reads:
 * a misspelling would otherwise run as if unset. 0 with line "CAPGUARD_EMULATE
 * is not a capguard variable (did you mean CAPGUARD_EMULATE_DRIVER?)", or
 * -1 when there is none left. */
int cg_env_unknown(size_t *at, char *line, size_t cap);

/* A yes/no variable's value as the shim reads it (unset or bad: no). */
bool cg_env_true(const char *name);

#endif
