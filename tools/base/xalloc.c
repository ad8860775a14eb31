#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>

void cg_out_of_memory(const char *doing) {
  fprintf(stderr, "capguard: out of memory %s\n", doing);
  exit(2);
}

void *cg_xrealloc(void *p, size_t n, const char *doing) {
  void *q = realloc(p, n ? n : 1);
  if (!q)
    cg_out_of_memory(doing);
  return q;
}
