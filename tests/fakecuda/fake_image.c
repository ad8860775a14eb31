/* fakecuda: recognising and measuring module images the way the driver must, since
 * cuModuleLoadData gets no length: an ELF cubin (e_machine 190) is measured from its
 * header, program and section tables; a fatbin from its header; PTX is NUL-terminated
 * text. The fake then copies exactly that many bytes, so a wrong size shows up as a
 * missing kernel name in tests, or as a read past the buffer under a sanitizer.
 * Every byte is checked readable before it is read (process_vm_readv on this process
 * answers EFAULT where a load would fault): a pointer into unmapped memory or a header
 * that points there gets CUDA_ERROR_INVALID_IMAGE, so tests can hand capguard hostile
 * images and still see the driver's own answer. */
#include "fake_internal.h"

#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define FC_IMAGE_MAX ((size_t)1 << 30)   /* larger "images" are garbage, not kernels */
#define EM_CUDA_MACHINE 190

/* The buffer an image read from a file lies in (a plain static: every entry point
 * runs under the fake's one lock); NULL when only the pointer is known. */
static const unsigned char *bound_lo, *bound_hi;

/* Whether [p, p + n) can be read without a fault (and lies inside the bounds). */
static int readable(const void *p, size_t n)
{
  char sink[4096];
  const unsigned char *b = p;
  if (bound_lo != NULL && (b < bound_lo || b > bound_hi || n > (size_t)(bound_hi - b)))
    return 0;
  while (n > 0) {
    size_t len = n < sizeof(sink) ? n : sizeof(sink);
    struct iovec local = { sink, len }, remote = { (void *)(uintptr_t)b, len };
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)len)
      return 0;
    b += len;
    n -= len;
  }
  return 1;
}

/* Grows *end to off + len, rejecting overflow or sizes past FC_IMAGE_MAX. */
static int extend(size_t *end, uint64_t off, uint64_t len)
{
  if (off > FC_IMAGE_MAX || len > FC_IMAGE_MAX - off)
    return 0;
  if (off + len > *end)
    *end = (size_t)(off + len);
  return 1;
}

static CUresult inspect_elf(const unsigned char *img, int sm, size_t *size)
{
  Elf64_Ehdr eh;
  if (!readable(img, sizeof(eh)))
    return CUDA_ERROR_INVALID_IMAGE;
  memcpy(&eh, img, sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_machine != EM_CUDA_MACHINE)
    return CUDA_ERROR_INVALID_IMAGE;
  if ((eh.e_phnum != 0 && eh.e_phentsize != sizeof(Elf64_Phdr)) ||
      (eh.e_shnum != 0 && eh.e_shentsize != sizeof(Elf64_Shdr)))
    return CUDA_ERROR_INVALID_IMAGE;
  size_t end = sizeof(eh);
  if (!extend(&end, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr)) ||
      !extend(&end, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
    return CUDA_ERROR_INVALID_IMAGE;
  if (!readable(img, end))
    return CUDA_ERROR_INVALID_IMAGE;
  for (unsigned i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, img + eh.e_phoff + (size_t)i * sizeof(ph), sizeof(ph));
    if (!extend(&end, ph.p_offset, ph.p_filesz))
      return CUDA_ERROR_INVALID_IMAGE;
  }
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, img + eh.e_shoff + (size_t)i * sizeof(sh), sizeof(sh));
    if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL &&
        !extend(&end, sh.sh_offset, sh.sh_size))
      return CUDA_ERROR_INVALID_IMAGE;
  }
  /* The cubin's target: newer ELF ABI versions moved the SM number up a byte. */
  unsigned arch = eh.e_ident[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff;
  if (!readable(img, end))
    return CUDA_ERROR_INVALID_IMAGE;
  if ((int)arch != sm)
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  *size = end;
  return CUDA_SUCCESS;
}

static CUresult inspect_fatbin(const unsigned char *img, size_t *size)
{
  uint16_t header_size;
  uint64_t fat_size;
  if (!readable(img, 16))
    return CUDA_ERROR_INVALID_IMAGE;
  memcpy(&header_size, img + 6, sizeof(header_size));
  memcpy(&fat_size, img + 8, sizeof(fat_size));
  size_t end = 0;
  if (header_size < 16 || !extend(&end, header_size, fat_size) || !readable(img, end))
    return CUDA_ERROR_INVALID_IMAGE;
  *size = end;
  return CUDA_SUCCESS;
}

static int is_ptx(const unsigned char *img)
{
  size_t i = 0;
  while (i < 4096 && readable(img + i, 2) && (img[i] == ' ' || img[i] == '\t' || img[i] == '\r' || img[i] == '\n'))
    i++;
  return readable(img + i, 2) && (img[i] == '.' || (img[i] == '/' && img[i + 1] == '/'));
}

/* Length of NUL-terminated text, a page at a time; FC_IMAGE_MAX if it runs into
 * unreadable memory first. */
static size_t text_len(const unsigned char *img)
{
  size_t n = 0;
  while (n < FC_IMAGE_MAX) {
    size_t step = 4096 - (size_t)((uintptr_t)(img + n) % 4096);
    if (bound_hi != NULL && step > (size_t)(bound_hi - (img + n)))
      step = (size_t)(bound_hi - (img + n));
    if (step == 0 || !readable(img + n, step))
      return FC_IMAGE_MAX;
    const unsigned char *nul = memchr(img + n, '\0', step);
    if (nul != NULL)
      return (size_t)(nul - img);
    n += step;
  }
  return FC_IMAGE_MAX;
}

/* Compares byte by byte, so a short text image is never read past its NUL. */
static int starts_with(const unsigned char *img, const unsigned char *magic, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!readable(img + i, 1) || img[i] != magic[i])
      return 0;
  return 1;
}

static const unsigned char fatbin_magic[4] = { 0x50, 0xED, 0x55, 0xBA };   /* 0xBA55ED50 */
static const unsigned char wrapper_magic[4] = { 0xB1, 0x43, 0x62, 0x46 };  /* 0x466243B1 */

static CUresult inspect(const void *image, int sm, enum fc_image_kind *kind, const unsigned char **start,
                        size_t *size);

CUresult fc_image_inspect(const void *image, size_t limit, int sm, enum fc_image_kind *kind,
                          const unsigned char **start, size_t *size)
{
  bound_lo = limit ? image : NULL;
  bound_hi = limit ? (const unsigned char *)image + limit : NULL;
  CUresult rc = inspect(image, sm, kind, start, size);
  bound_lo = bound_hi = NULL;
  return rc;
}

static CUresult inspect(const void *image, int sm, enum fc_image_kind *kind, const unsigned char **start,
                        size_t *size)
{
  const unsigned char *img = image;
  if (starts_with(img, wrapper_magic, 4)) {
    /* struct { int magic; int version; const unsigned long long *data; void *filename; } */
    const void *data;
    if (!readable(img, 8 + sizeof(data)))
      return CUDA_ERROR_INVALID_IMAGE;
    memcpy(&data, img + 8, sizeof(data));
    if (data == NULL || !starts_with(data, fatbin_magic, 4))
      return CUDA_ERROR_INVALID_IMAGE;
    img = data;
  }
  CUresult rc;
  *start = img;
  if (starts_with(img, fatbin_magic, 4)) {
    *kind = FC_IMG_FATBIN;
    rc = inspect_fatbin(img, size);
  } else if (starts_with(img, (const unsigned char *)ELFMAG, SELFMAG)) {
    *kind = FC_IMG_CUBIN;
    rc = inspect_elf(img, sm, size);
  } else if (is_ptx(img)) {
    *kind = FC_IMG_PTX;
    size_t n = text_len(img);
    rc = n < FC_IMAGE_MAX ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
    *size = n + 1;
  } else {
    rc = CUDA_ERROR_INVALID_IMAGE;
  }
  return rc;
}

/* Binary images: name is present as a whole NUL-terminated string (as in a string
 * table: "\0name\0"). PTX: name follows ".entry" and is followed by '(' or blank. */
int fc_image_has_name(enum fc_image_kind kind, const unsigned char *img, size_t size,
                      const char *name)
{
  size_t len = strlen(name);
  if (len == 0 || len > 4096)
    return 0;
  if (kind != FC_IMG_PTX) {
    for (size_t i = 1; i + len < size; i++)
      if (img[i - 1] == '\0' && img[i + len] == '\0' && memcmp(img + i, name, len) == 0)
        return 1;
    return 0;
  }
  const char *text = (const char *)img;
  for (const char *p = strstr(text, ".entry"); p != NULL; p = strstr(p + 1, ".entry")) {
    const char *q = p + 6;
    if (*q != ' ' && *q != '\t')
      continue;
    while (*q == ' ' || *q == '\t')
      q++;
    if (strncmp(q, name, len) == 0 && strchr("( \t\r\n", q[len]) != NULL && q[len] != '\0')
      return 1;
  }
  return 0;
}
