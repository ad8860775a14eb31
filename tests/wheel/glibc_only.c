/* A program that needs glibc alone, and no symbol version above
 * GLIBC_2.34 on any glibc: what the wheel checks must accept. Built without
 * sanitizers, so it stays glibc-only in a sanitized build too. */
#include <stdio.h>

int main(int argc, char **argv) {
  (void)argv;
  printf("%d\n", argc);
  return 0;
}
