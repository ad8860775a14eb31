/* TEMPORARY, worktree only: stands in for tools/cmd_prime.c (written by another
 * helper) so the command builds. tools/meson.build uses cmd_prime.c as soon as
 * it exists; delete this file at merge. */
#include <stdio.h>

#include "commands.h"

int cg_cmd_prime(int argc, char **argv) {
  (void)argc;
  (void)argv;
  puts("capguard prime: not yet");
  return 0;
}
