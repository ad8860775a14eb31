/* capguard: the command-line front end. Dispatches to run, report, doctor, prime. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "doc_path.h"

static const char USAGE[] = "capguard [--version] [--help] COMMAND [ARGS...]";

static void help(void) {
  char man[4200];
  printf("usage: %s\n\n"
         "Find and fix CUDA graph captures broken by driver calls made mid-capture.\n\n"
         "commands:\n"
         "  run      run a command with the capguard shim preloaded, then summarise\n"
         "  report   read capguard logs: broken captures, kernels, call sites, advice\n"
         "  doctor   check this machine: driver, shim, interposition routes, files\n"
         "  prime    manage the priming file (kernels loaded before capture)\n\n"
         "Run 'capguard COMMAND --help' for a command's options, '%s' for more.\n",
         USAGE, cg_man_command(man, sizeof man));
}

static const struct {
  const char *name;
  int (*fn)(int, char **);
} COMMANDS[] = {
    {"run", cg_cmd_run},
    {"report", cg_cmd_report},
    {"doctor", cg_cmd_doctor},
    {"prime", cg_cmd_prime},
};

int main(int argc, char **argv) {
  if (argc < 2)
    return cg_usage_error("capguard", USAGE, "missing command (run, report, doctor or prime)");
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    help();
    return CG_EXIT_OK;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
    printf("capguard %s\n", CAPGUARD_VERSION);
    return CG_EXIT_OK;
  }
  /* "capguard help run" is "capguard run --help". */
  if (!strcmp(cmd, "help")) {
    if (argc < 3) {
      help();
      return CG_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
      if (!strcmp(argv[2], COMMANDS[i].name)) {
        char *hv[] = {argv[2], (char *)"--help", NULL};
        return COMMANDS[i].fn(2, hv);
      }
    return cg_usage_error("capguard", USAGE, "unknown command '%s'; run 'capguard --help'",
                          argv[2]);
  }
  for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
    if (!strcmp(cmd, COMMANDS[i].name)) {
      int rc = COMMANDS[i].fn(argc - 1, argv + 1);
      /* Output that pipes cleanly: a failed write (full disk, closed pipe) is an error. */
      if (fflush(stdout) != 0 && rc == CG_EXIT_OK)
        rc = CG_EXIT_USAGE;
      return rc;
    }
  if (cmd[0] == '-')
    return cg_usage_error("capguard", USAGE, "unknown option '%s'", cmd);
  return cg_usage_error("capguard", NULL, "unknown command '%s'; run 'capguard --help' to list them",
                        cmd);
}
