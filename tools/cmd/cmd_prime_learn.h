/* capguard prime learn / check: record every load during capture in one run
 * where the driver allows it, then prove the file serves them all the way a
 * driver before 12.3 would need. */
#ifndef CAPGUARD_CMD_PRIME_LEARN_H
#define CAPGUARD_CMD_PRIME_LEARN_H

/* argv[0] is "learn" or "check". */
int cg_cmd_prime_learn(int argc, char **argv);
int cg_cmd_prime_check(int argc, char **argv);

#endif
