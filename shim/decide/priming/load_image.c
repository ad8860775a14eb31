#include "load_image.h"

#include <sys/mman.h>

#include "device_arch.h"

/* Compressed entries are decompressed for their kernel names only up to
 * this much scratch: a larger one keeps its kernels unnamed. */
#define UNPACK_SCRATCH_MAX ((size_t)64 << 20)

int cg_load_image_inspect(const void *img, size_t limit, cg_image_info *out, bool unpack) {
  if (cg_image_inspect(img, limit, out) != 0)
    return -1;
  /* Compressed ELF entries (zstd: torch, nvcc; LZ4: -compress-mode=speed):
   * decompressed into pages of our own, returned at once, for their names */
  size_t room = unpack ? out->unpack_room : 0;
  if (room && room <= UNPACK_SCRATCH_MAX) {
    void *scratch = mmap(NULL, room, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (scratch != MAP_FAILED) {
      int rc = cg_image_inspect_with(img, limit, out, scratch, room);
      munmap(scratch, room);
      if (rc != 0)
        return -1;
    }
  }
  /* A fatbin is said (and recorded) as the arch this device runs it as, not
   * its highest entry: sm_90 on an H100, not sm_120. */
  unsigned device = out->kind == CG_IMAGE_FATBIN ? cg_device_arch() : 0;
  if (device)
    out->sm_arch = out->on_device = cg_image_arch_on(out, device);
  return 0;
}
