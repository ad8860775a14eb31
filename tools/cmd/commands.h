/* The capguard subcommands; each takes its own argv (argv[0] is the command's name). */
#ifndef CAPGUARD_COMMANDS_H
#define CAPGUARD_COMMANDS_H

int cg_cmd_run(int argc, char **argv);
int cg_cmd_report(int argc, char **argv);
int cg_cmd_doctor(int argc, char **argv);
/* argv[0] is "prime". Returns the exit status: 0 ok, 1 damage found or the
 * file or a record could not be used, 2 usage error (tools/cmd/cmd_prime.c). */
int cg_cmd_prime(int argc, char **argv);

#endif
