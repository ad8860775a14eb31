/* A stand-in for libcapguard.so in the CLI's tests (the real shim is built
 * elsewhere). Preloaded by `capguard run`, it writes what the real one would
 * in the simplest case: a "process" line at start and a "summary" line at
 * exit, to $CAPGUARD_LOG, one write(2) per line on an O_APPEND descriptor.
 * CGTEST_FAKE_REFUSED=N (in the process whose argv[0] ends in CGTEST_FAKE_IN,
 * default every process) adds N refused module loads in one broken capture,
 * each with its own kernel, and (in guard mode) says N images were recorded.
 * In mode off it writes nothing. It also exports
 * cuModuleLoadData so the doctor's exported-symbol route finds it. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int refused, recorded;

static bool off(void) {
  const char *m = getenv("CAPGUARD_MODE");
  return m && !strcmp(m, "off");
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void put(const char *line) {
  const char *path = getenv("CAPGUARD_LOG");
  if (!path || !*path || off())
    return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  ssize_t n = write(fd, line, strlen(line));
  (void)n;
  close(fd);
}

__attribute__((constructor)) static void start(int argc, char **argv) {
  char line[1024];
  const char *mode = getenv("CAPGUARD_MODE");
  snprintf(line, sizeof line,
           "{\"v\":1,\"type\":\"process\",\"pid\":%d,\"time_ns\":%lld,\"ppid\":%d,"
           "\"argv\":[\"%s\"],\"mode\":\"%s\",\"driver_version\":0,\"emulate_driver\":0,"
           "\"version\":\"fake\"}\n",
           (int)getpid(), now_ns(), (int)getppid(), argc > 0 && !strpbrk(argv[0], "\"\\") ? argv[0] : "?",
           mode && *mode ? mode : "guard");
  put(line);
  const char *n = getenv("CGTEST_FAKE_REFUSED"), *in = getenv("CGTEST_FAKE_IN");
  if (!n || (in && *in && (argc < 1 || !strstr(argv[0], in))))
    return;
  refused = atoi(n);
  recorded = mode && *mode && strcmp(mode, "guard") ? 0 : refused;
  long long t = now_ns();
  for (int i = 0; i < refused; i++) {
    snprintf(line, sizeof line,
             "{\"v\":1,\"type\":\"event\",\"pid\":%d,\"time_ns\":%lld,\"event\":\"module-load\","
             "\"call\":\"cuModuleLoadData\",\"verdict\":\"refused\",\"result\":900,"
             "\"driver_result\":900,\"tid\":%d,\"capture\":{\"id\":1,\"stream\":\"0x10\","
             "\"mode\":\"global\",\"tid\":%d,\"status\":\"invalidated\",\"began\":\"fake.py:1\"},"
             "\"image\":{\"kind\":\"cubin\",\"kernels\":[\"fake_kernel_%d\"]},"
             "\"native_stack\":[],\"python_stack\":[{\"file\":\"fake.py\",\"line\":%d,"
             "\"func\":\"load\"}]}\n",
             (int)getpid(), t + i + 1, (int)getpid(), (int)getpid(), i, 10 + i);
    put(line);
  }
  snprintf(line, sizeof line,
           "{\"v\":1,\"type\":\"capture\",\"pid\":%d,\"time_ns\":%lld,\"id\":1,\"stream\":\"0x10\","
           "\"mode\":\"global\",\"tid\":%d,\"status\":\"failed\",\"begin_ns\":%lld,\"end_ns\":%lld,"
           "\"events\":%d,\"began\":\"fake.py:1\"}\n",
           (int)getpid(), t + refused + 2, (int)getpid(), t, t + refused + 2, refused);
  put(line);
}

__attribute__((destructor)) static void stop(void) {
  char line[512];
  snprintf(line, sizeof line,
           "{\"v\":1,\"type\":\"summary\",\"pid\":%d,\"time_ns\":%lld,\"captures\":%d,"
           "\"captures_broken\":%d,\"events\":{\"module-load\":%d},\"verdicts\":{\"refused\":%d},"
           "\"primed_loaded\":0,\"primed_served\":0,\"primed_unused\":0,\"recorded\":%d}\n",
           (int)getpid(), now_ns(), refused ? 1 : 0, refused ? 1 : 0, refused, refused, recorded);
  put(line);
}

int cuModuleLoadData(void **module, const void *image);
int cuModuleLoadData(void **module, const void *image) {
  (void)module;
  (void)image;
  return 999; /* CUDA_ERROR_UNKNOWN: this is not a driver */
}
