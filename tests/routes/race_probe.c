/* Races and odd ends (docs/reliability.md, attacks 1 to 4), each a scenario run
 * under capguard over the fake driver (linked directly: the exported-symbol
 * route). Prints what the program saw as key=value lines; test_races.py
 * checks them, the fake's trace and capguard's log.
 *
 *   watchdog N global|relaxed   a thread polls an event from before the first
 *                               capture; the main thread makes N captures, each
 *                               recording the event into itself (attack 1)
 *   parking N                   two threads make N captures each, each
 *                               recording an event of its own into each;
 *                               three threads poll those events in bursts,
 *                               each then idle for 3 to 8 begins (long
 *                               enough for a begin to park its slot) and
 *                               polling again the moment a capturing thread
 *                               says it begins the next (attack 1)
 *   membarriers idle|wake|busy N
 *                               a helper thread queries an event 5 times; the
 *                               main thread makes N captures meanwhile; idle:
 *                               the helper stays alive and queries no more;
 *                               wake: it queries once more after N/2
 *                               captures; busy: once between any two
 *                               captures (the test counts the membarrier
 *                               system calls under strace)
 *   reuse                       an event recorded in a capture is destroyed
 *                               mid-capture; a new event (likely the same
 *                               handle) is queried from another thread (attack 2)
 *   wrongend global|thread-local|relaxed
 *                               another thread ends the main thread's capture,
 *                               which holds a deferred free and a captured
 *                               event; then the main thread ends it (attack 4)
 *   nullend                     cuStreamEndCapture(stream, NULL) (attack 4)
 *   destroy same|other          the capturing stream is destroyed mid-capture
 *                               by the capturing thread or another (attack 4)
 *   threadexit                  a thread begins a global capture and exits;
 *                               the main thread allocates, then ends it (attack 4)
 *   mixed N IMAGE [MODE [swap]] two threads make N captures each (recording an
 *                               event into each; MODE: global (default),
 *                               thread-local or relaxed), two others call
 *                               allocations, frees, syncs, cuCtxSetLimit, event
 *                               queries and syncs, host allocations, host
 *                               memory registered and unregistered, module
 *                               and library loads and unloads meanwhile
 *                               (attack 8);
 *                               swap: the callers switch their own capture mode
 *                               now and then, at random
 */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static CUcontext ctx;

static __attribute__((noreturn)) void die(const char *what) {
  fprintf(stderr, "race_probe: %s\n", what);
  exit(2);
}

static CUstreamCaptureMode mode_of(const char *m) {
  return !strcmp(m, "global") ? CU_STREAM_CAPTURE_MODE_GLOBAL
         : !strcmp(m, "thread-local") ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                                      : CU_STREAM_CAPTURE_MODE_RELAXED;
}

/* ---- watchdog */
static CUevent watched;
static volatile int stop;
static CUstreamCaptureMode poller_mode;
static long polls, polls_ready, polls_not_ready, polls_captured, polls_other;

static int fresh_pollers; /* each poller thread polls a few times and exits; a new one follows */

static void *poller(void *arg) {
  if (cuCtxSetCurrent(ctx))
    die("poller set-up");
  CUstreamCaptureMode m = poller_mode;
  cuThreadExchangeStreamCaptureMode(&m);
  for (long burst = arg ? 8 : -1; !stop && burst != 0; burst--) {
    CUresult r = cuEventQuery(watched);
    polls++;
    if (r == CUDA_SUCCESS)
      polls_ready++;
    else if (r == CUDA_ERROR_NOT_READY)
      polls_not_ready++;
    else if (r == CUDA_ERROR_CAPTURED_EVENT)
      polls_captured++;
    else
      polls_other++;
  }
  return NULL;
}

/* Short-lived pollers, one after the other: a capture's begin then often
 * finds no other thread holding a query slot (it skips membarrier) while
 * the next poller's first query claims one (query_fence.c). */
static void *fresh_poller_chain(void *arg) {
  (void)arg;
  while (!stop) {
    pthread_t t;
    if (pthread_create(&t, NULL, poller, (void *)1))
      die("fresh poller");
    pthread_join(t, NULL);
  }
  return NULL;
}

static int watchdog(int n, const char *mode) {
  fresh_pollers = !strncmp(mode, "fresh-", 6);
  if (fresh_pollers)
    mode += 6;
  poller_mode = mode_of(mode);
  CUstream s, side;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuStreamCreate(&side, CU_STREAM_NON_BLOCKING) ||
      cuEventCreate(&watched, 0) || cuEventRecord(watched, side))
    die("watchdog set-up");
  pthread_t t;
  pthread_create(&t, NULL, fresh_pollers ? fresh_poller_chain : poller, NULL);
  while (!__atomic_load_n(&polls, __ATOMIC_RELAXED)) /* started before the first capture */
    sched_yield();
  int broken = 0, begins_failed = 0;
  for (int i = 0; i < n; i++) {
    if (cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)) {
      begins_failed++;
      continue;
    }
    if (i % 3 == 0)
      sched_yield(); /* the poller may come between the begin and the record */
    cuEventRecord(watched, s);
    struct timespec ts = {0, 20000}; /* and poll the captured event */
    nanosleep(&ts, NULL);
    CUgraph g = NULL;
    if (cuStreamEndCapture(s, &g) != CUDA_SUCCESS)
      broken++;
    if (g)
      cuGraphDestroy(g);
    if (i % 7 == 0)
      sched_yield(); /* let the poller meet the next begin from anywhere */
  }
  stop = 1;
  pthread_join(t, NULL);
  printf("captures=%d\nbroken=%d\nbegins_failed=%d\npolls=%ld\npolls_ready=%ld\npolls_not_ready=%ld\n"
         "polls_captured=%ld\npolls_other=%ld\n",
         n, broken, begins_failed, polls, polls_ready, polls_not_ready, polls_captured, polls_other);
  return 0;
}

/* ---- attack 1 with parked slots */
static long begins_announced; /* begins the capturing threads are about to make */
static CUevent parking_ev[2];

static void count_poll(CUresult r) {
  __atomic_add_fetch(&polls, 1, __ATOMIC_RELAXED);
  if (r == CUDA_SUCCESS)
    __atomic_add_fetch(&polls_ready, 1, __ATOMIC_RELAXED);
  else if (r == CUDA_ERROR_NOT_READY)
    __atomic_add_fetch(&polls_not_ready, 1, __ATOMIC_RELAXED);
  else if (r == CUDA_ERROR_CAPTURED_EVENT)
    __atomic_add_fetch(&polls_captured, 1, __ATOMIC_RELAXED);
  else
    __atomic_add_fetch(&polls_other, 1, __ATOMIC_RELAXED);
}

/* Polls in bursts of 1 to 3, then waits for 3 to 8 begins (a begin parks
 * a slot whose word stayed the same since the begin before) and polls
 * again as soon as the next begin is announced: the unpark races that
 * begin's look at the slots. */
static void *parking_poller(void *arg) {
  uint64_t rnd = 0x2545f4914f6cdd1dull * (uint64_t)((intptr_t)arg + 1);
  if (cuCtxSetCurrent(ctx))
    die("poller set-up");
  CUstreamCaptureMode m = (intptr_t)arg == 0 ? CU_STREAM_CAPTURE_MODE_GLOBAL : CU_STREAM_CAPTURE_MODE_RELAXED;
  cuThreadExchangeStreamCaptureMode(&m);
  while (!stop) {
    rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
    for (unsigned b = 1 + rnd % 3; b; b--)
      count_poll(cuEventQuery(parking_ev[(rnd >> 4) & 1]));
    long until = __atomic_load_n(&begins_announced, __ATOMIC_ACQUIRE) + 3 + (long)(rnd >> 8) % 6;
    for (unsigned spins = 0; !stop && __atomic_load_n(&begins_announced, __ATOMIC_ACQUIRE) < until; spins++)
      if (spins < 256) {
        sched_yield();
      } else {
        struct timespec ts = {0, 10000};
        nanosleep(&ts, NULL);
      }
  }
  return NULL;
}

static int parking_captures;
static long parking_broken, parking_begins_failed;

/* Captures on a stream of its own, each recording the thread's event into
 * itself; two of them, so that begins meet (one may be parking slots while
 * the other looks at them). */
static void *parking_capturer(void *arg) {
  int k = (int)(intptr_t)arg;
  CUstream s;
  if (cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
    die("capturer set-up");
  for (int i = 0; i < parking_captures; i++) {
    __atomic_add_fetch(&begins_announced, 1, __ATOMIC_RELEASE);
    (void)close(-7); /* a marker the test's strace sees before each begin (EBADF) */
    if (cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)) {
      __atomic_add_fetch(&parking_begins_failed, 1, __ATOMIC_RELAXED);
      continue;
    }
    if (i % 3 == 0)
      sched_yield(); /* a poller may come between the begin and the record */
    cuEventRecord(parking_ev[k], s);
    if (i % 2) {
      struct timespec ts = {0, 20000}; /* and poll the captured event */
      nanosleep(&ts, NULL);
    }
    CUgraph g = NULL;
    if (cuStreamEndCapture(s, &g) != CUDA_SUCCESS)
      __atomic_add_fetch(&parking_broken, 1, __ATOMIC_RELAXED);
    if (g)
      cuGraphDestroy(g);
    if (i % 5 == 0)
      sched_yield();
  }
  return NULL;
}

static int parking(int n) {
  CUstream side;
  if (cuStreamCreate(&side, CU_STREAM_NON_BLOCKING) || cuEventCreate(&parking_ev[0], 0) ||
      cuEventCreate(&parking_ev[1], 0) || cuEventRecord(parking_ev[0], side) || cuEventRecord(parking_ev[1], side))
    die("parking set-up");
  parking_captures = n;
  pthread_t t[5];
  for (intptr_t i = 0; i < 3; i++)
    pthread_create(&t[i], NULL, parking_poller, (void *)i);
  while (__atomic_load_n(&polls, __ATOMIC_RELAXED) < 3)
    sched_yield();
  for (intptr_t i = 0; i < 2; i++)
    pthread_create(&t[3 + i], NULL, parking_capturer, (void *)i);
  for (int i = 3; i < 5; i++)
    pthread_join(t[i], NULL);
  stop = 1;
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);
  printf("captures=%d\nbroken=%ld\nbegins_failed=%ld\npolls=%ld\npolls_ready=%ld\npolls_not_ready=%ld\n"
         "polls_captured=%ld\npolls_other=%ld\n",
         2 * n, parking_broken, parking_begins_failed, polls, polls_ready, polls_not_ready, polls_captured,
         polls_other);
  return 0;
}

/* ---- the begins' membarriers */
static long helper_asked, helper_answered; /* queries asked of the helper, and made */

static void *membarrier_helper(void *arg) {
  (void)arg;
  if (cuCtxSetCurrent(ctx))
    die("helper set-up");
  for (int i = 0; i < 5; i++)
    count_poll(cuEventQuery(watched));
  __atomic_store_n(&helper_answered, 5, __ATOMIC_RELEASE);
  while (!stop) {
    long asked = __atomic_load_n(&helper_asked, __ATOMIC_ACQUIRE);
    if (asked > __atomic_load_n(&helper_answered, __ATOMIC_RELAXED)) {
      count_poll(cuEventQuery(watched));
      __atomic_store_n(&helper_answered, asked, __ATOMIC_RELEASE);
      continue;
    }
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void ask_helper(void) {
  long want = __atomic_load_n(&helper_answered, __ATOMIC_ACQUIRE) + 1;
  __atomic_store_n(&helper_asked, want, __ATOMIC_RELEASE);
  while (__atomic_load_n(&helper_answered, __ATOMIC_ACQUIRE) < want)
    sched_yield();
}

static int membarriers(const char *how, int n) {
  CUstream s, side;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuStreamCreate(&side, CU_STREAM_NON_BLOCKING) ||
      cuEventCreate(&watched, 0) || cuEventRecord(watched, side))
    die("membarriers set-up");
  helper_asked = 5;
  pthread_t t;
  pthread_create(&t, NULL, membarrier_helper, NULL);
  while (__atomic_load_n(&helper_answered, __ATOMIC_ACQUIRE) < 5)
    sched_yield();
  int failed = 0;
  for (int i = 0; i < n; i++) {
    if ((!strcmp(how, "busy") && i > 0) || (!strcmp(how, "wake") && i == n / 2))
      ask_helper();
    CUgraph g = NULL;
    if (cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) || cuStreamEndCapture(s, &g) || !g)
      failed++;
    if (g)
      cuGraphDestroy(g);
  }
  stop = 1;
  pthread_join(t, NULL);
  printf("captures=%d\nfailed=%d\npolls=%ld\npolls_ready=%ld\n", n, failed, polls, polls_ready);
  return 0;
}

/* ---- one call on another thread */
typedef struct {
  int what; /* 0: query event, 1: end capture, 2: destroy stream, 3: begin and exit */
  CUevent e;
  CUstream s;
  CUstreamCaptureMode mode;
  CUresult r;
  CUgraph g;
} job;
static void *run_job(void *arg) {
  job *j = arg;
  if (cuCtxSetCurrent(ctx))
    die("thread set-up");
  if (j->what == 0)
    j->r = cuEventQuery(j->e);
  else if (j->what == 1)
    j->r = cuStreamEndCapture(j->s, &j->g);
  else if (j->what == 2)
    j->r = cuStreamDestroy(j->s);
  else
    j->r = cuStreamBeginCapture(j->s, j->mode);
  return NULL;
}
static CUresult on_thread(job *j) {
  pthread_t t;
  pthread_create(&t, NULL, run_job, j);
  pthread_join(t, NULL);
  return j->r;
}

/* ---- attack 2 */
static int reuse(void) {
  CUstream s;
  CUevent e1, e2;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuEventCreate(&e1, 0))
    die("reuse set-up");
  printf("begin_result=%d\n", (int)cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  printf("record_result=%d\n", (int)cuEventRecord(e1, s));
  printf("destroy_result=%d\n", (int)cuEventDestroy(e1));
  /* The fake hands a freed event's memory out again, unless capguard's own
   * allocations took it in between: new events until one has the handle. */
  CUevent spare[64];
  int n = 0;
  for (; n < 64; n++) {
    if (cuEventCreate(&e2, 0))
      die("event create");
    if (e2 == e1)
      break;
    spare[n] = e2;
  }
  printf("reused=%d\n", e2 == e1);
  job q = {.what = 0, .e = e2};
  printf("query_result=%d\n", (int)on_thread(&q));
  CUgraph g = NULL;
  printf("end_result=%d\n", (int)cuStreamEndCapture(s, &g));
  for (int i = 0; i < n; i++)
    cuEventDestroy(spare[i]);
  return 0;
}

/* ---- attack 4 */

/* A capture on s holding a deferred free (of *p) and a captured event. */
static void capture_with_work(CUstream s, CUstreamCaptureMode mode, CUdeviceptr *p, CUevent *e) {
  if (cuMemAlloc(p, 4096) || cuEventCreate(e, 0))
    die("set-up");
  printf("begin_result=%d\n", (int)cuStreamBeginCapture(s, mode));
  printf("record_result=%d\n", (int)cuEventRecord(*e, s));
  printf("free_result=%d\n", (int)cuMemFree(*p)); /* guard mode defers it where prohibited */
}

/* After the capture is over: the deferred free ran (so freeing again is the
 * driver's error), the event is the driver's to answer, an allocation
 * succeeds. */
static void after(CUdeviceptr p, CUevent e) {
  job q = {.what = 0, .e = e};
  printf("query_after=%d\n", (int)on_thread(&q));
  printf("free_again=%d\n", (int)cuMemFree(p));
  CUdeviceptr x;
  CUresult r = cuMemAlloc(&x, 64);
  printf("alloc_after=%d\n", (int)r);
  if (r == CUDA_SUCCESS)
    cuMemFree(x);
}

static int wrongend(const char *mode) {
  CUstream s;
  CUdeviceptr p;
  CUevent e;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
    die("stream");
  capture_with_work(s, mode_of(mode), &p, &e);
  job j = {.what = 1, .s = s};
  printf("other_end=%d\n", (int)on_thread(&j));
  if (j.g)
    cuGraphDestroy(j.g);
  after(p, e);
  CUgraph g = NULL;
  printf("own_end=%d\n", (int)cuStreamEndCapture(s, &g));
  return 0;
}

static int nullend(void) {
  CUstream s;
  CUdeviceptr p;
  CUevent e;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
    die("stream");
  capture_with_work(s, CU_STREAM_CAPTURE_MODE_GLOBAL, &p, &e);
  printf("null_end=%d\n", (int)cuStreamEndCapture(s, NULL));
  after(p, e);
  CUgraph g = NULL;
  printf("own_end=%d\n", (int)cuStreamEndCapture(s, &g));
  return 0;
}

static int destroy(const char *who) {
  CUstream s, other;
  CUdeviceptr p;
  CUevent e;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuStreamCreate(&other, CU_STREAM_NON_BLOCKING))
    die("stream");
  capture_with_work(s, CU_STREAM_CAPTURE_MODE_GLOBAL, &p, &e);
  CUresult r;
  if (!strcmp(who, "same"))
    r = cuStreamDestroy(s);
  else {
    job j = {.what = 2, .s = s};
    r = on_thread(&j);
  }
  printf("destroy_result=%d\n", (int)r);
  after(p, e);
  /* Another capture, with a call that makes capguard look at every open
   * capture: the destroyed stream must never be named to the driver. */
  CUdeviceptr q;
  if (cuMemAlloc(&q, 64))
    die("alloc");
  printf("begin2_result=%d\n", (int)cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_GLOBAL));
  printf("free2_result=%d\n", (int)cuMemFree(q));
  CUgraph g = NULL;
  printf("end2_result=%d\n", (int)cuStreamEndCapture(other, &g));
  return 0;
}

static int threadexit(void) {
  CUstream s;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
    die("stream");
  job j = {.what = 3, .s = s, .mode = CU_STREAM_CAPTURE_MODE_GLOBAL};
  printf("begin_result=%d\n", (int)on_thread(&j));
  CUdeviceptr x;
  printf("alloc_result=%d\n", (int)cuMemAlloc(&x, 64));
  CUgraph g = NULL;
  printf("end_result=%d\n", (int)cuStreamEndCapture(s, &g));
  CUresult r = cuMemAlloc(&x, 64);
  printf("alloc_after=%d\n", (int)r);
  return 0;
}

/* ---- attack 8 */
static int mixed_captures;
static CUstreamCaptureMode mixed_mode;
static int mixed_swap;
static volatile int capturers_left;
static CUevent captured_ev[2], before_ev;
static CUstream idle_stream;
static const void *image;
static long mixed_ends, mixed_broken;

static void *capturer(void *arg) {
  int k = (int)(intptr_t)arg;
  CUstream s;
  if (cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
    die("capturer set-up");
  for (int i = 0; i < mixed_captures; i++) {
    if (cuStreamBeginCapture(s, mixed_mode))
      die("begin");
    cuEventRecord(captured_ev[k], s);
    for (int y = 0; y < i % 4; y++) /* short captures and longer ones */
      sched_yield();
    CUgraph g = NULL;
    __atomic_add_fetch(&mixed_ends, 1, __ATOMIC_RELAXED);
    if (cuStreamEndCapture(s, &g) != CUDA_SUCCESS)
      __atomic_add_fetch(&mixed_broken, 1, __ATOMIC_RELAXED);
    if (g)
      cuGraphDestroy(g);
    if (i % 2) { /* moments with nothing capturing: the callers' fast paths meet the next begin */
      struct timespec ts = {0, 30000};
      nanosleep(&ts, NULL);
    }
  }
  __atomic_sub_fetch(&capturers_left, 1, __ATOMIC_RELEASE);
  return NULL;
}

static uint64_t next_rand(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static char caller_pinned[2][4096]; /* each caller's memory to register and unregister */

static void *caller(void *arg) {
  char *pinned = caller_pinned[(intptr_t)arg & 1];
  uint64_t rnd = 0x9e3779b97f4a7c15ull * (uint64_t)((intptr_t)arg + 1);
  if (cuCtxSetCurrent(ctx))
    die("caller set-up");
  while (__atomic_load_n(&capturers_left, __ATOMIC_ACQUIRE)) {
    CUdeviceptr p;
    CUmodule m;
    CUlibrary lib;
    void *host;
    if (mixed_swap && next_rand(&rnd) % 16 == 0) {
      CUstreamCaptureMode mode = (CUstreamCaptureMode)(next_rand(&rnd) % 3);
      cuThreadExchangeStreamCaptureMode(&mode);
    }
    switch (next_rand(&rnd) % 12) {
    case 0:
      if (cuMemAlloc(&p, 256) == CUDA_SUCCESS)
        cuMemFree(p);
      break;
    case 1: cuCtxSynchronize(); break;
    case 2: cuStreamSynchronize(idle_stream); break;
    case 3: cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 << 20); break;
    case 4: cuEventQuery(before_ev); break;
    case 5: cuEventQuery(captured_ev[next_rand(&rnd) & 1]); break;
    case 6:
      if (cuModuleLoadData(&m, image) == CUDA_SUCCESS)
        while (cuModuleUnload(m) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
          sched_yield();
      break;
    case 7: cuEventSynchronize(before_ev); break;
    case 8:
      if (cuMemHostAlloc(&host, 256, 0) == CUDA_SUCCESS)
        while (cuMemFreeHost(host) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
          sched_yield();
      break;
    case 9:
      if (cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS)
        while (cuLibraryUnload(lib) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
          sched_yield();
      break;
    case 10:
      if (cuMemHostRegister(pinned, sizeof caller_pinned[0], 0) == CUDA_SUCCESS)
        while (cuMemHostUnregister(pinned) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
          sched_yield();
      break;
    default: sched_yield(); break;
    }
  }
  return NULL;
}

static int mixed(int n, const char *path, const char *mode, int swap) {
  FILE *f = fopen(path, "rb");
  static char buf[1 << 20];
  size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f)
    fclose(f);
  if (!len)
    die("image");
  image = buf;
  mixed_captures = n;
  mixed_mode = mode_of(mode);
  mixed_swap = swap;
  if (cuStreamCreate(&idle_stream, CU_STREAM_NON_BLOCKING) || cuEventCreate(&before_ev, 0) ||
      cuEventCreate(&captured_ev[0], 0) || cuEventCreate(&captured_ev[1], 0) || cuEventRecord(before_ev, idle_stream))
    die("mixed set-up");
  capturers_left = 2;
  pthread_t t[4];
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, capturer, (void *)(intptr_t)i);
  for (int i = 0; i < 2; i++)
    pthread_create(&t[2 + i], NULL, caller, (void *)(intptr_t)i);
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  printf("ends=%ld\nbroken=%ld\n", mixed_ends, mixed_broken);
  return 0;
}

int main(int argc, char **argv) {
  CUdevice dev;
  if (argc < 2 || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx))
    die("usage: race_probe SCENARIO [ARGS] (or driver set-up failed)");
  const char *sc = argv[1], *a = argc > 2 ? argv[2] : "";
  if (!strcmp(sc, "watchdog") && argc == 4)
    return watchdog(atoi(a), argv[3]);
  if (!strcmp(sc, "parking") && argc == 3)
    return parking(atoi(a));
  if (!strcmp(sc, "membarriers") && argc == 4)
    return membarriers(a, atoi(argv[3]));
  if (!strcmp(sc, "reuse"))
    return reuse();
  if (!strcmp(sc, "wrongend") && argc == 3)
    return wrongend(a);
  if (!strcmp(sc, "nullend"))
    return nullend();
  if (!strcmp(sc, "destroy") && argc == 3)
    return destroy(a);
  if (!strcmp(sc, "threadexit"))
    return threadexit();
  if (!strcmp(sc, "mixed") && argc >= 4 && argc <= 6)
    return mixed(atoi(a), argv[3], argc > 4 ? argv[4] : "global", argc > 5 && !strcmp(argv[5], "swap"));
  die("unknown scenario");
}
