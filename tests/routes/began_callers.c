/* Two native callers that begin captures through a libcudart stand-in
 * (bench/capture/cudart_bench.c), as torch does through the real one: the
 * same return address in "libcudart", two different callers above it, with
 * frames of different sizes. test_began_broken.py checks that the report
 * names the right one for every capture, so that capguard's kept paths
 * (shim/stack_site.c) never name a caller from an earlier capture. */
int cg_bench_cudart_begin(void *fn, void *stream, int mode);

__attribute__((visibility("default"), noinline)) int cg_began_from_a(void *fn, void *stream, int mode) {
  int r = cg_bench_cudart_begin(fn, stream, mode);
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((visibility("default"), noinline)) int cg_began_from_b(void *fn, void *stream, int mode) {
  volatile char pad[200];
  pad[0] = 0;
  int r = cg_bench_cudart_begin(fn, stream, mode);
  __asm__ volatile("" ::: "memory");
  return r + pad[0];
}

/* A caller whose frame size changes from call to call (alloca), so that the
 * kept addresses above it move: capguard's check must still find them, or
 * unwind again, and never name another caller. */
__attribute__((visibility("default"), noinline)) int cg_began_from_c(void *fn, void *stream, int mode, int pad) {
  volatile char *room = __builtin_alloca((unsigned)pad + 1);
  room[0] = 0;
  int r = cg_bench_cudart_begin(fn, stream, mode);
  __asm__ volatile("" ::: "memory");
  return r + room[0];
}
