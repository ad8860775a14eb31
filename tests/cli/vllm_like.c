/* A process tree shaped like vLLM's start-up, for `capguard run` tests over
 * the fake driver: a parent (the "engine core", which never touches CUDA)
 * starts worker processes, one per GPU, and fails if any worker fails.
 *   - workers 0..N-1 are fork+exec'd copies of this program (--worker I);
 *   - one more worker is started with posix_spawn through /bin/sh, so that
 *     it is a grandchild with a shell in between (the way launchers wrap
 *     commands); it loads with cuModuleLoadDataEx (--ex), another loader.
 * Like vLLM's workers, which meet in collectives, the workers wait for each
 * other once every one has begun its capture, so that none can profit from
 * what another records into a shared priming file during the same run: run
 * 1 breaks every worker's capture, not just the first's.
 * --library makes a worker load with cuLibraryLoadData instead;
 * --library-options with cuLibraryLoadData and a JIT option (CU_JIT_MAX_REGISTERS 64),
 * --library-preserved with CU_LIBRARY_BINARY_IS_PRESERVED 1, as the CUDA runtime's lazy
 * loading does (both recorded with their options and served), --foreign-options with
 * CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE, a table in the program's memory
 * (a load capguard cannot reproduce, so never serves or records).
 * Each worker reaches the driver the way cudart does (dlopen libcuda.so.1,
 * dlsym cuGetProcAddress_v2, ask it for "cuGetProcAddress" at 12000, then
 * everything through that), begins a graph capture, loads the kernel image
 * for the first time inside it (a JIT-compiled kernel's first use) and
 * launches KERNEL from it, ends the capture and exits 1 if it broke.
 * Usage: vllm_like [--workers N] [--ex|--library|--library-options|--library-preserved|--foreign-options] CUBIN KERNEL
 *        vllm_like --worker I [--ex|--library|--library-options|--library-preserved|--foreign-options] CUBIN KERNEL   (what the parent runs) */
#include <cuda.h>

#include "capguard/file_read.h"
#include "driver_open.h"
#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int me = -1;

/* The barrier: the parent passes two inherited descriptors in VLLM_LIKE_SYNC
 * ("READY,GO"); a worker writes one byte to READY, then waits for GO to reach
 * end of file (the parent closes it once every worker is ready). */
static void meet_the_others(void) {
  const char *sync = getenv("VLLM_LIKE_SYNC");
  int ready, go;
  if (!sync || sscanf(sync, "%d,%d", &ready, &go) != 2)
    return;
  char c = 'r';
  ssize_t w = write(ready, &c, 1);
  close(ready); /* a worker that died closed it too: the parent sees end of file, never hangs */
  while (w == 1 && read(go, &c, 1) < 0 && errno == EINTR) {
  }
  close(go);
}

enum loader { LOAD_DATA, LOAD_DATA_EX, LIBRARY_LOAD_DATA, LIBRARY_LOAD_OPTIONS, LIBRARY_PRESERVED, FOREIGN_OPTIONS };

static int worker(int index, enum loader how, const char *cubin, const char *kernel) {
  me = index;
  size_t image_size;
  void *image = cg_read_file(cubin, (size_t)1 << 30, &image_size);
  if (!image) {
    fprintf(stderr, "worker %d: cannot read %s\n", me, cubin);
    return 2;
  }
  char who[32];
  snprintf(who, sizeof who, "worker %d", me);
  if (tk_driver_open(who) != 0) {
    fprintf(stderr, "worker %d: no CUDA driver\n", me);
    return 2;
  }
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = tk_driver_get("cuStreamBeginCapture");
  CUresult (*end)(CUstream, CUgraph *) = tk_driver_get("cuStreamEndCapture");
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     CUstream, void **, void **) = tk_driver_get("cuLaunchKernel");
  CUresult (*error_name)(CUresult, const char **) = tk_driver_get("cuGetErrorName");

  CUstream s;
  if (tk_driver_setup(&s)) {
    fprintf(stderr, "worker %d: driver set-up failed\n", me);
    return 2;
  }
  begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  meet_the_others();
  CUfunction fn = NULL;
  CUresult r;
  if (how >= LIBRARY_LOAD_DATA) {
    CUresult (*lib_load)(CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *,
                         void **, unsigned) = tk_driver_get("cuLibraryLoadData");
    CUresult (*lib_kernel)(CUkernel *, CUlibrary, const char *) = tk_driver_get("cuLibraryGetKernel");
    CUresult (*kernel_fn)(CUfunction *, CUkernel) = tk_driver_get("cuKernelGetFunction");
    CUlibrary lib;
    CUkernel k;
    CUjit_option jit[] = {CU_JIT_MAX_REGISTERS};
    void *jit_vals[] = {(void *)(uintptr_t)64};
    /* the runtime's lazy loading passes binary-is-preserved; a host table is
     * the program's memory, which capguard cannot reproduce */
    static int host_table[4];
    CUlibraryOption lib_opt[] = {how == FOREIGN_OPTIONS ? CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE
                                                        : CU_LIBRARY_BINARY_IS_PRESERVED};
    void *lib_vals[] = {how == FOREIGN_OPTIONS ? (void *)host_table : (void *)(uintptr_t)1};
    r = how == LIBRARY_LOAD_OPTIONS ? lib_load(&lib, image, jit, jit_vals, 1, NULL, NULL, 0)
        : how == LIBRARY_LOAD_DATA  ? lib_load(&lib, image, NULL, NULL, 0, NULL, NULL, 0)
                                    : lib_load(&lib, image, NULL, NULL, 0, lib_opt, lib_vals, 1);
    if (r == CUDA_SUCCESS && (r = lib_kernel(&k, lib, kernel)) == CUDA_SUCCESS)
      r = kernel_fn(&fn, k);
  } else {
    CUresult (*get_function)(CUfunction *, CUmodule, const char *) = tk_driver_get("cuModuleGetFunction");
    CUmodule mod;
    if (how == LOAD_DATA_EX) {
      CUresult (*load_ex)(CUmodule *, const void *, unsigned, CUjit_option *, void **) =
          tk_driver_get("cuModuleLoadDataEx");
      r = load_ex(&mod, image, 0, NULL, NULL);
    } else {
      CUresult (*load)(CUmodule *, const void *) = tk_driver_get("cuModuleLoadData");
      r = load(&mod, image);
    }
    if (r == CUDA_SUCCESS)
      r = get_function(&fn, mod, kernel);
  }
  if (r == CUDA_SUCCESS)
    launch(fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
  CUgraph g = NULL;
  CUresult e = end(s, &g);
  if (e != CUDA_SUCCESS) {
    const char *name = "?";
    error_name(e, &name);
    fprintf(stderr, "worker %d (pid %d): CUDA graph capture failed: %s\n", me, (int)getpid(), name);
    return 1;
  }
  printf("worker %d (pid %d): graph captured\n", me, (int)getpid());
  return 0;
}

static int wait_for(pid_t pid, int index) {
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return 1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  fprintf(stderr, "engine: worker %d (pid %d) failed (%s %d)\n", index, (int)pid,
          WIFEXITED(status) ? "exit status" : "signal",
          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  return 1;
}

static int parent(int n, const char *loader, const char *cubin, const char *kernel) {
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    perror("engine: /proc/self/exe");
    return 2;
  }
  self[len] = '\0';
  pid_t pids[65];
  char idx[16], sync[32];
  int ready[2], go[2];
  if (pipe(ready) || pipe(go)) {
    perror("engine: pipe");
    return 2;
  }
  snprintf(sync, sizeof sync, "%d,%d", ready[1], go[0]);
  setenv("VLLM_LIKE_SYNC", sync, 1);
  fflush(stdout);
  for (int i = 0; i < n; i++) {
    snprintf(idx, sizeof idx, "%d", i);
    pids[i] = fork();
    if (pids[i] == 0) {
      close(ready[0]);
      close(go[1]);
      execl(self, self, "--worker", idx, cubin, kernel, (char *)NULL);
      _exit(127);
    }
    if (pids[i] < 0) {
      perror("engine: fork");
      return 2;
    }
  }
  /* The last worker through a shell that stays its parent (not exec'd away). */
  snprintf(idx, sizeof idx, "%d", n);
  char *sh_argv[] = {"sh", "-c", "\"$0\" --worker \"$1\" \"$2\" \"$3\" \"$4\"; exit $?", self, idx,
                     (char *)loader, (char *)cubin, (char *)kernel, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, ready[0]);
  posix_spawn_file_actions_addclose(&fa, go[1]);
  int err = posix_spawn(&pids[n], "/bin/sh", &fa, NULL, sh_argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err) {
    fprintf(stderr, "engine: posix_spawn: %s\n", strerror(err));
    return 2;
  }
  close(ready[1]);
  close(go[0]);
  /* Every worker has begun its capture (or died: end of file) before any goes on. */
  char c;
  for (int i = 0; i <= n; i++)
    if (read(ready[0], &c, 1) != 1)
      break;
  close(go[1]);
  close(ready[0]);
  int failed = 0;
  for (int i = 0; i <= n; i++)
    failed += wait_for(pids[i], i);
  if (failed) {
    fprintf(stderr, "engine: %d of %d workers failed; shutting down\n", failed, n + 1);
    return 1;
  }
  printf("engine: all %d workers ready\n", n + 1);
  return 0;
}

static int loader_of(const char *flag, enum loader *how) {
  if (!strcmp(flag, "--ex"))
    *how = LOAD_DATA_EX;
  else if (!strcmp(flag, "--library-options"))
    *how = LIBRARY_LOAD_OPTIONS;
  else if (!strcmp(flag, "--library-preserved"))
    *how = LIBRARY_PRESERVED;
  else if (!strcmp(flag, "--foreign-options"))
    *how = FOREIGN_OPTIONS;
  else if (!strcmp(flag, "--library"))
    *how = LIBRARY_LOAD_DATA;
  else
    return -1;
  return 0;
}

int main(int argc, char **argv) {
  enum loader how = LOAD_DATA;
  if (argc == 5 && !strcmp(argv[1], "--worker"))
    return worker(atoi(argv[2]), LOAD_DATA, argv[3], argv[4]);
  if (argc == 6 && !strcmp(argv[1], "--worker") && loader_of(argv[3], &how) == 0)
    return worker(atoi(argv[2]), how, argv[4], argv[5]);
  int n = 3, at = 1;
  const char *last = "--ex"; /* the shell-started worker's loader */
  for (; at + 1 < argc && argv[at][0] == '-'; at++) {
    if (!strcmp(argv[at], "--workers") && at + 2 < argc)
      n = atoi(argv[++at]);
    else if (loader_of(argv[at], &how) == 0)
      last = argv[at];
    else
      break;
  }
  if (argc - at != 2 || n < 1 || n > 64) {
    fprintf(
        stderr,
        "usage: vllm_like [--workers N] [--ex|--library|--library-options|--library-preserved|--foreign-options] CUBIN KERNEL (N from 1 to 64;\n"
        "  the loader flag picks how the shell-started worker loads; default --ex)\n");
    return 2;
  }
  return parent(n, last, argv[at], argv[at + 1]);
}
