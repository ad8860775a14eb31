/* capguard run's options, one row each (run_options.c): the row feeds the
 * parser (getopt's table and the option's own check), the usage line and
 * --help, and the CAPGUARD_* variable the option sets for the shim, which
 * the environment table (tools/base/env_table.c) checks. The completion
 * (tools/completion/capguard.bash) and the man page (docs/capguard.1) are
 * held to the rows by the tests cli-completion and cli-run-options. */
#ifndef CAPGUARD_RUN_OPTIONS_H
#define CAPGUARD_RUN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  const char *mode, *log, *prime, *emulate, *metrics, *hang;
  bool rescue, quiet, stale;
  bool prime_given;        /* --prime on the command line (not the program's own file) */
  int error_exitcode;      /* 0: off */
  bool request_loads_fail; /* --request-path-loads=error: a load on the request path fails the run */
} run_opts;

typedef struct {
  const char *name;  /* "mode": --mode */
  char short_name;   /* 'q': -q as well; 0: none */
  const char *usage; /* its words in the usage line ("--mode guard|report|off"); NULL: not there */
  const char *arg;   /* what it takes, NULL: nothing */
  /* The CAPGUARD_* variable it sets for the shim (NULL: none), and whether
   * run sets it itself (the log: a temporary one when none is given). */
  const char *env;
  bool env_by_run;
  /* Keeps the option's value (NULL for an option that takes none): 0, or
   * the exit status after saying why on stderr. */
  int (*take)(run_opts *o, const char *value);
  /* The value its variable is set to when the option was given, else NULL
   * (an absolute path where the shim must have one: children may chdir). */
  const char *(*given)(const run_opts *o, char *buf, size_t cap);
  const char *help; /* its lines of --help */
} cg_run_option;

extern const cg_run_option cg_run_options[];
extern const size_t cg_run_n_options;

extern const char CG_RUN_ME[]; /* "capguard run" */
/* "capguard run [--mode guard|report|off] ... -- CMD [ARGS...]" */
const char *cg_run_usage(void);
/* --help */
void cg_run_help(void);
/* The option that sets variable env, NULL when none does. */
const cg_run_option *cg_run_option_for_env(const char *env);
/* Options (argv up to "--" or the command) into o: 0 and *cmd_at the
 * command's index, -1 after --help, or an exit status after saying why. */
int cg_run_parse_options(int argc, char **argv, run_opts *o, int *cmd_at);

#endif
