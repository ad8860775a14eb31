/* For test_dwarf_lines.py: prints what the line-table reader answers for
 * each address (hexadecimal, as linked) in an object: "ADDR FILE:LINE", or
 * "ADDR ??" when it has no answer. With --indexed every lookup goes through
 * one index (cg_dwarf_line_indexed), as the shim's do; an argument @PATH
 * switches to another object (the same index: it must start again); with
 * --debug-root DIR too, separate debug files are looked for under DIR.
 * Usage: dwarf_lines_probe [--indexed [--debug-root DIR]] OBJECT ADDR|@PATH... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/dwarf_lines.h"

int main(int argc, char **argv) {
  int first = 1;
  bool indexed = argc > 1 && !strcmp(argv[1], "--indexed");
  const char *debug_root = NULL;
  if (indexed)
    first++;
  if (indexed && argc > first + 1 && !strcmp(argv[first], "--debug-root"))
    debug_root = argv[first + 1], first += 2;
  if (argc <= first) {
    fprintf(stderr, "usage: dwarf_lines_probe [--indexed [--debug-root DIR]] OBJECT ADDR|@PATH...\n");
    return 2;
  }
  const char *path = argv[first];
  cg_dwarf_index ix = {0};
  for (int i = first + 1; i < argc; i++) {
    if (argv[i][0] == '@') {
      path = argv[i] + 1;
      continue;
    }
    char buf[256];
    unsigned long long pc = strtoull(argv[i], NULL, 16);
    bool found = indexed ? cg_dwarf_line_indexed(path, debug_root, pc, &ix, buf, sizeof buf)
                         : cg_dwarf_line_of(path, pc, buf, sizeof buf);
    printf("%llx %s\n", pc, found ? buf : "??");
  }
  cg_dwarf_index_free(&ix);
  return 0;
}
