/* Every copy and memset row under capguard (tests/fakecuda/copy_calls.h holds the
 * calls): one capture (on a blocking stream with --blocking, else non-blocking;
 * --mode) holding one kernel, and in it --op ROW (a row's name in copy_calls.h) made on
 * --place legacy (the legacy stream: NULL, or CU_STREAM_LEGACY for a _ptsz form),
 * capturing (the capturing stream) or per-thread (stream 0 of a _ptsz form), by the
 * capturing thread or another (--thread other). --pinned makes the host buffers
 * page-locked (cuMemHostRegister). Linked to the driver: each call is the exported
 * symbol, which LD_PRELOAD puts capguard in front of. Prints op_result= and
 * end_result= for test_escapes.py.
 * --race THREADS ITERATIONS instead: each thread, on its own cell (blocking
 * streams on even threads, non-blocking on odd ones), begins a capture in a
 * random mode, makes a random row's call on the legacy or its capturing
 * stream, and ends the capture, ITERATIONS times, all at once: captures begin
 * and end while other threads' copies reach the driver. Prints race_ops=,
 * race_bad= (results other than 0, 906 and 901), race_ends_broken=. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "copy_calls.h"
#include "probe_check.h"

static void die(const char *what) {
  fprintf(stderr, "copy_probe: %s\n", what);
  exit(2);
}

static const struct row *row;
static struct cell cell;
static CUstream where;
static CUcontext ctx;
static CUresult op_result = CUDA_ERROR_UNKNOWN;

static void *op_thread(void *arg) {
  (void)arg;
  CHECK(cuCtxSetCurrent(ctx));
  op_result = row->call(&cell, where);
  return NULL;
}

/* ---- --race */
static int race_iters;
static long race_ops, race_bad, race_broken;
static CUmodule race_module;
static pthread_barrier_t race_start;

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void *race_thread(void *arg) {
  long index = (long)(intptr_t)arg;
  struct cell c;
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(copy_cell_setup(&c, ctx, index % 2 ? CU_STREAM_NON_BLOCKING : 0));
  CHECK(cuModuleGetFunction(&c.add_one, race_module, "fake_add_one"));
  uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(index + 1);
  long ops = 0, bad = 0, broken = 0;
  pthread_barrier_wait(&race_start);
  for (int i = 0; i < race_iters; i++) {
    static const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                CU_STREAM_CAPTURE_MODE_RELAXED};
    const struct row *r = &rows[next_rand(&seed) % NROWS];
    int capturing = r->how != 'S' && next_rand(&seed) % 2;
    CUstream s = capturing ? c.stream : r->how == 'X' ? CU_STREAM_LEGACY : NULL;
    CHECK(cuStreamBeginCapture_v2(c.stream, modes[next_rand(&seed) % 3]));
    CUresult k = cuLaunchKernel(c.add_one, 1, 1, 1, 32, 1, 1, 0, c.stream, NULL, NULL);
    CUresult rc = r->call(&c, s);
    CUgraph g = NULL;
    CUresult end = cuStreamEndCapture(c.stream, &g);
    ops++;
    if ((k != CUDA_SUCCESS && k != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) ||
        (rc != CUDA_SUCCESS && rc != CUDA_ERROR_STREAM_CAPTURE_IMPLICIT && rc != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) ||
        (end != CUDA_SUCCESS && end != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)) {
      bad++;
      fprintf(stderr, "copy_probe: %s: launch %d, call %d, end %d\n", r->name, (int)k, (int)rc, (int)end);
    }
    broken += end == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (g)
      cuGraphDestroy(g);
  }
  __atomic_add_fetch(&race_ops, ops, __ATOMIC_RELAXED);
  __atomic_add_fetch(&race_bad, bad, __ATOMIC_RELAXED);
  __atomic_add_fetch(&race_broken, broken, __ATOMIC_RELAXED);
  return NULL;
}

static int race(int threads) {
  pthread_t t[64];
  if (threads < 1 || threads > 64)
    die("--race: 1 to 64 threads");
  pthread_barrier_init(&race_start, NULL, (unsigned)threads);
  for (long i = 0; i < threads; i++)
    pthread_create(&t[i], NULL, race_thread, (void *)(intptr_t)i);
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  printf("race_ops=%ld\nrace_bad=%ld\nrace_ends_broken=%ld\n", race_ops, race_bad, race_broken);
  return 0;
}

int main(int argc, char **argv) {
  const char *op = NULL, *place = "legacy";
  int race_threads = 0;
  int blocking = 0, other = 0, pinned = 0;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--route")) i++; /* always the exported symbol */
    else if (!strcmp(a, "--op")) op = v, i++;
    else if (!strcmp(a, "--place")) place = v, i++;
    else if (!strcmp(a, "--thread")) other = !strcmp(v, "other"), i++;
    else if (!strcmp(a, "--blocking")) blocking = 1;
    else if (!strcmp(a, "--pinned")) pinned = 1;
    else if (!strcmp(a, "--race") && i + 2 < argc) race_threads = atoi(v), race_iters = atoi(argv[i + 2]), i += 2;
    else if (!strcmp(a, "--mode")) {
      mode = !strcmp(v, "relaxed") ? CU_STREAM_CAPTURE_MODE_RELAXED
             : !strcmp(v, "thread-local") ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                                          : CU_STREAM_CAPTURE_MODE_GLOBAL;
      i++;
    } else die("unknown argument");
  }
  if (!race_threads && (!op || !(row = copy_row(op))))
    die("--op names no row of copy_calls.h");
  CUmodule mod;
  ctx = probe_primary_context();
  const char *cubin = getenv("CG_CUBIN");
  if (!cubin)
    die("CG_CUBIN not set");
  CHECK(cuModuleLoad(&mod, cubin));
  if (race_threads) {
    race_module = mod;
    return race(race_threads);
  }
  CHECK(cuModuleGetFunction(&cell.add_one, mod, "fake_add_one"));
  CUfunction fn = cell.add_one;
  CHECK(copy_cell_setup(&cell, ctx, blocking ? 0 : CU_STREAM_NON_BLOCKING));
  cell.add_one = fn;
  if (pinned) {
    CHECK(cuMemHostRegister_v2(cell.host_src, N, 0));
    CHECK(cuMemHostRegister_v2(cell.host_dst, N, 0));
  }
  where = !strcmp(place, "capturing") ? cell.stream
          : !strcmp(place, "per-thread") ? NULL
          : row->how == 'X'               ? CU_STREAM_LEGACY
                                          : NULL;

  CHECK(cuStreamBeginCapture_v2(cell.stream, mode));
  CHECK(cuLaunchKernel(cell.add_one, 1, 1, 1, 32, 1, 1, 0, cell.stream, NULL, NULL));
  if (other) {
    pthread_t t;
    pthread_create(&t, NULL, op_thread, NULL);
    pthread_join(t, NULL);
  } else {
    op_result = row->call(&cell, where);
  }
  CUgraph g;
  CUresult end = cuStreamEndCapture(cell.stream, &g);
  printf("op_result=%d\nend_result=%d\n", (int)op_result, (int)end);
  return 0;
}
