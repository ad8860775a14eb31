#include <stdio.h>
#include <string.h>

#include "process_command.h"

void cgr_process_command(const cgl_process *pr, char *cmd, size_t cap) {
  size_t used = 0;
  cmd[0] = '\0';
  for (size_t i = 0; i < pr->argc && used < cap - 1; i++) {
    const char *w = pr->argv[i], *slash = i == 0 ? strrchr(w, '/') : NULL;
    int n = snprintf(cmd + used, cap - used, "%s%s", i ? " " : "", slash ? slash + 1 : w);
    used = n < 0 ? used : used + (size_t)n;
  }
  if (used >= cap - 1 && cap > 4)
    memcpy(cmd + cap - 4, "...", 4);
}
