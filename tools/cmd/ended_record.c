#include "ended_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capguard/clock.h"
#include "capguard/event.h"
#include "capguard/log_file.h"
#include "capguard/log_keys.h"
#include "capguard/log_schema.h"

/* Whether path, from offset on, has a start or process record of pid: the
 * shim writes each as {"v":1,"type":"start","pid":N,... (event_format.c). */
static int holds_pid(const char *path, long long offset, long long pid) {
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  char start[96], process[96];
  snprintf(start, sizeof start, "\"" CG_KEY_TYPE "\":\"%s\",\"" CG_KEY_PID "\":%lld,",
           cg_record_type_name(CG_RECORD_START), pid);
  snprintf(process, sizeof process, "\"" CG_KEY_TYPE "\":\"%s\",\"" CG_KEY_PID "\":%lld,",
           cg_record_type_name(CG_RECORD_PROCESS), pid);
  int found = 0;
  char *line = NULL;
  size_t cap = 0;
  if (offset <= 0 || fseeko(f, (off_t)offset, SEEK_SET) == 0)
    while (!found && getline(&line, &cap, f) > 0)
      found = strstr(line, start) || strstr(line, process);
  free(line);
  fclose(f);
  return found;
}

void cg_record_ended(const cg_run_log_file *files, size_t n, long long pid, int sig) {
  if (pid <= 0 || sig <= 0)
    return;
  for (size_t i = 0; i < n; i++) {
    if (!holds_pid(files[i].path, files[i].offset, pid))
      continue;
    char why[256], line[256];
    int fd = cg_log_open(files[i].path, why, sizeof why);
    if (fd < 0)
      return; /* the report then says the process ended without an exit record, as before */
    size_t len = cg_ended_format_json((uint64_t)pid, cg_now_ns(), sig, line, sizeof line);
    ssize_t w = write(fd, line, len); /* O_APPEND: one line, whole, after the others' */
    (void)w;
    close(fd);
    return;
  }
}
