/* The hang watch's probe (test_hang.py), linked to the fake driver directly:
 *   sync          captures a graph on a stream, launches it there and
 *                 synchronizes the stream (FAKECUDA_SYNC_BLOCK_MS makes that
 *                 wait, as a rank whose peer never comes would);
 *   open SECONDS  begins a capture and leaves it open SECONDS (a plain sleep,
 *                 no driver call) before ending it.
 * Prints done=1 when it got to its end. */
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_check.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: hang_probe sync | open SECONDS\n");
    return 2;
  }
  CUstream s;
  CUgraph g;
  (void)probe_primary_context();
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  if (strcmp(argv[1], "open") == 0) {
    struct timespec t = {argc > 2 ? atoi(argv[2]) : 2, 0};
    nanosleep(&t, NULL);
    CHECK(cuStreamEndCapture(s, &g));
  } else {
    CUgraphExec e;
    CHECK(cuStreamEndCapture(s, &g));
    CHECK(cuGraphInstantiateWithFlags(&e, g, 0));
    CHECK(cuGraphLaunch(e, s));
    CHECK(cuStreamSynchronize(s));
  }
  printf("done=1\n");
  return 0;
}
