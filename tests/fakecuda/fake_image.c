/* fakecuda: recognising and measuring module images the way the driver must, since
 * cuModuleLoadData gets no length: an ELF cubin (e_machine 190) is measured from its
 * header, program and section tables; a fatbin from its header; PTX is NUL-terminated
 * text. The fake then copies exactly that many bytes, so a wrong size shows up as a
 * missing kernel name in tests, or as a read past the buffer under a sanitizer. */
#include "fake_internal.h"

#include <elf.h>
#include <string.h>

#define FC_IMAGE_MAX ((size_t)1 << 30)   /* larger "images" are garbage, not kernels */
#define EM_CUDA_MACHINE 190

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
  if ((int)arch != sm)
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  *size = end;
  return CUDA_SUCCESS;
}

static CUresult inspect_fatbin(const unsigned char *img, size_t *size)
{
  uint16_t header_size;
  uint64_t fat_size;
  memcpy(&header_size, img + 6, sizeof(header_size));
  memcpy(&fat_size, img + 8, sizeof(fat_size));
  size_t end = 0;
  if (header_size < 16 || !extend(&end, header_size, fat_size))
    return CUDA_ERROR_INVALID_IMAGE;
  *size = end;
  return CUDA_SUCCESS;
}

static int is_ptx(const unsigned char *img)
{
  size_t i = 0;
  while (i < 4096 && (img[i] == ' ' || img[i] == '\t' || img[i] == '\r' || img[i] == '\n'))
    i++;
  return img[i] == '.' || (img[i] == '/' && img[i + 1] == '/');
}

/* Compares byte by byte, so a short text image is never read past its NUL. */
static int starts_with(const unsigned char *img, const unsigned char *magic, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (img[i] != magic[i])
      return 0;
  return 1;
}

static const unsigned char fatbin_magic[4] = { 0x50, 0xED, 0x55, 0xBA };   /* 0xBA55ED50 */
static const unsigned char wrapper_magic[4] = { 0xB1, 0x43, 0x62, 0x46 };  /* 0x466243B1 */

CUresult fc_image_inspect(const void *image, int sm, enum fc_image_kind *kind,
                          const unsigned char **start, size_t *size)
{
  const unsigned char *img = image;
  if (starts_with(img, wrapper_magic, 4)) {
    /* struct { int magic; int version; const unsigned long long *data; void *filename; } */
    const void *data;
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
    size_t n = strnlen((const char *)img, FC_IMAGE_MAX);
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
