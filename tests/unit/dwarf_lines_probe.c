/* For test_dwarf_lines.py: prints what cg_dwarf_line_of answers for each
 * address (hexadecimal, as linked) in an object: "ADDR FILE:LINE", or
 * "ADDR ??" when it has no answer. Usage: dwarf_lines_probe OBJECT ADDR... */
#include <stdio.h>
#include <stdlib.h>

#include "capguard/dwarf_lines.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: dwarf_lines_probe OBJECT ADDR...\n");
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    char buf[256];
    unsigned long long pc = strtoull(argv[i], NULL, 16);
    bool found = cg_dwarf_line_of(argv[1], pc, buf, sizeof buf);
    printf("%llx %s\n", pc, found ? buf : "??");
  }
  return 0;
}
