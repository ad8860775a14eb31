/* Minimal `capguard` for testing `capguard prime` on its own; the real
 * tools/main.c (dispatch, --help, --version) replaces it when merged. */
#include <stdio.h>
#include <string.h>

#include "cmd_prime.h"

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "prime") == 0) return cg_cmd_prime(argc - 1, argv + 1);
  fprintf(stderr, "capguard: only 'capguard prime' is built here; run 'capguard prime --help'\n");
  return 2;
}
