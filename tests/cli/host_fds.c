/* A daemon-style host that closes every descriptor from 3 up and opens a
 * data file of its own, over the fake driver (found as libcuda.so.1 through
 * LD_LIBRARY_PATH):
 *   host_fds before|after DATA
 *       closes descriptors 3 to 1023 (as closefrom does) and opens DATA
 *       (which then gets the lowest free number: the one capguard's log had),
 *       before its CUDA set-up or after it (and after a first capture); then
 *       captures twice with an allocation in each (broken: capguard reports
 *       and logs them), writes its own two lines to DATA and exits 0. DATA
 *       must hold exactly "host: line 1\nhost: line 2\n".
 *   host_fds before DATA LOG
 *       the same, having first removed the file LOG and its directory (as
 *       an operator might): the log cannot be opened again.
 * Exit: 0, 1 when a driver call failed (said on stdout), 2 usage. */
#include <cuda.h>

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "broken_capture.h"
#include "driver_open.h"

static int close_all_and_open(const char *data, const char *log) {
  if (log) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", log);
    char *slash = strrchr(dir, '/');
    if (slash)
      *slash = '\0';
    if (unlink(log) != 0 || rmdir(dir) != 0)
      return -1;
  }
  for (int fd = 3; fd < 1024; fd++)
    close(fd);
  int fd = open(data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  static const char line[] = "host: line 1\n";
  if (fd < 0 || write(fd, line, sizeof line - 1) != (ssize_t)sizeof line - 1)
    return -1;
  printf("host: data file on descriptor %d\n", fd);
  return fd;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4 || (strcmp(argv[1], "before") && strcmp(argv[1], "after")))
    goto usage;
  bool before = !strcmp(argv[1], "before");
  int data = -1;
  if (before && (data = close_all_and_open(argv[2], argc == 4 ? argv[3] : NULL)) < 0)
    return 1;
  if (tk_driver_open("host_fds") != 0)
    return 1;
  CUstream s;
  CUresult r = tk_driver_setup(&s);
  if (r) {
    printf("host_fds: driver set-up failed (CUresult %d)\n", (int)r);
    return 1;
  }
  if (!before) {
    tk_broken_capture(s);
    if ((data = close_all_and_open(argv[2], argc == 4 ? argv[3] : NULL)) < 0)
      return 1;
  }
  tk_broken_capture(s);
  tk_broken_capture(s);
  static const char line[] = "host: line 2\n";
  if (write(data, line, sizeof line - 1) != (ssize_t)sizeof line - 1 || close(data) != 0)
    return 1;
  return 0;
usage:
  fprintf(stderr, "usage: host_fds before|after DATA [LOG]\n");
  return 2;
}
