/* `capguard prime`: inspect and maintain the priming file. */
#ifndef CAPGUARD_CMD_PRIME_H
#define CAPGUARD_CMD_PRIME_H

/* argv[0] is "prime". Returns the exit status: 0 ok, 1 damage found or the
 * file or a record could not be used, 2 usage error. */
int cg_cmd_prime(int argc, char **argv);

#endif
