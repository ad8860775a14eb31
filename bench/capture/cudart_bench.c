/* A stand-in for libcudart in the capture benchmark (bench_capture.py): its
 * name starts with "libcudart", so capguard's report looks past it, as it
 * looks past the real one, to the library that called it; and it reaches
 * the driver through a few frames of its own, as the real one does. */
typedef int (*cg_bench_begin_fn)(void *, int);
typedef int (*cg_bench_end_fn)(void *, void **);

__attribute__((noinline)) static int driver_begin(void *fn, void *stream, int mode) {
  int r = ((cg_bench_begin_fn)fn)(stream, mode);
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((noinline)) static int api_begin(void *fn, void *stream, int mode) {
  int r = driver_begin(fn, stream, mode);
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((visibility("default"))) int cg_bench_cudart_begin(void *fn, void *stream, int mode) {
  int r = api_begin(fn, stream, mode);
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((visibility("default"))) int cg_bench_cudart_end(void *fn, void *stream, void **graph) {
  int r = ((cg_bench_end_fn)fn)(stream, graph);
  __asm__ volatile("" ::: "memory");
  return r;
}
