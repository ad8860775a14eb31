/* A compressed fatbin held in a shared library's read-only data, as the
 * CUDA runtime's fatbins are held in the .nv_fatbin section of the library
 * whose kernels they are (torch's): jit_probe serve loads it with
 * JIT_PROBE_IMAGE2=@embedded. Handed out by a function, never referenced
 * as data from the program, which a copy relocation would move into the
 * program's own memory. */
#include <stddef.h>

__asm__(".section .rodata\n"
        ".balign 16\n"
        ".globl cg_embedded_start\n.hidden cg_embedded_start\n"
        "cg_embedded_start:\n"
        ".incbin \"" CG_EMBEDDED_IMAGE "\"\n"
        ".globl cg_embedded_end\n.hidden cg_embedded_end\n"
        "cg_embedded_end:\n"
        ".previous\n");

extern const unsigned char cg_embedded_start[], cg_embedded_end[];

/* The runtime hands the driver a fatbin wrapper (in the library's
 * writable data) that points to the fatbin (in its read-only data), not
 * the fatbin itself (measured: torch's lazy loads on CUDA 13). */
static const struct {
  int magic, version;
  const void *data;
  void *filename_or_fatbins;
} wrapper = {0x466243b1, 1, cg_embedded_start, 0};

const void *cg_embedded_image(size_t *size) {
  *size = (size_t)(cg_embedded_end - cg_embedded_start);
  return &wrapper;
}
