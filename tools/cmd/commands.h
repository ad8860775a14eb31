/* The capguard subcommands; each takes its own argv (argv[0] is the command's name). */
#ifndef CAPGUARD_COMMANDS_H
#define CAPGUARD_COMMANDS_H

int cg_cmd_run(int argc, char **argv);
int cg_cmd_report(int argc, char **argv);
int cg_cmd_doctor(int argc, char **argv);
/* tools/cmd/cmd_prime.c (written separately) */
int cg_cmd_prime(int argc, char **argv);

#endif
