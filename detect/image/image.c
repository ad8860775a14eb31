/* Module image inspection: kind, exact size, SM arch, kernel names and hash of
 * what a program hands to cuModuleLoadData & co.
 *
 * The driver API passes images without a length, so everything here is read
 * from the image's own headers. Two bounds guard every read: the caller's
 * limit (clamped to CG_IMAGE_MAX_BYTES) and, once known, the size the headers
 * claim. When the caller has only the pointer (limit CG_IMAGE_MAX_BYTES), a
 * third: bytes are read only after cg_mem_check said they are mapped
 * readable, as far as the headers ask and no further (a lying header then
 * makes the image unknown instead of faulting; memory another thread unmaps
 * between the check and the read still faults, but then the caller is handing
 * the driver memory it is freeing). All offset arithmetic goes
 * through overflow-checked helpers, fields are read byte by byte (little
 * endian, no alignment assumptions), and nothing is allocated: this runs
 * inside someone else's process.
 *
 * Layouts, checked against nvcc 13.0 output (tests/data/README.md):
 *  - cubin: ELF64 LE, e_machine 190. ABI version >= 8 (OSABI 0x41) keeps the
 *    SM in e_flags bits 8..15; older ABIs (OSABI 0x33) in bits 0..7. Entry
 *    kernels are STT_FUNC symbols with STO_CUDA_ENTRY (0x10) in st_other.
 *  - fatbin: {u32 magic, u16 version, u16 header_size, u64 fat_size}, then
 *    entries {u16 kind, u16, u32 header_size, u64 payload_size, ...,
 *    u32 arch @0x1C, u64 flags @0x28}; kind 1 PTX, 2 ELF, 8 LTO-IR; flags
 *    0x2000 = LZ4-compressed payload, 0x8000 = zstd-compressed payload.
 *  - fatbin wrapper (what __cudaRegisterFatBinary gets): {u32 magic,
 *    u32 version, const void *data, const void *filename_or_fatbins}.
 *  - PTX: NUL-terminated text starting (after comments) with .version. */
#include "capguard/image.h"

#include "capguard/mem_probe.h"
#include "capguard/zstd_decode.h"

#include <string.h>
#include <xxhash.h>

#define ELF_EHDR_SIZE 64u
#define ELF_PHDR_SIZE 56u
#define ELF_SHDR_SIZE 64u
#define ELF_SYM_SIZE 24u
#define EM_CUDA 190u
#define SHT_SYMTAB 2u
#define SHT_STRTAB 3u
#define SHT_NOBITS 8u
#define STT_FUNC 2u
#define STO_CUDA_ENTRY 0x10u

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243B1u
#define FATBIN_HEADER_SIZE 16u
#define FATBIN_ENTRY_MIN_HEADER 0x40u /* covers every field read below */
#define FATBIN_KIND_PTX 1u
#define FATBIN_KIND_ELF 2u
#define FATBIN_FLAG_LZ4 0x2000u
#define FATBIN_FLAG_ZSTD 0x8000u

/* How far leading whitespace and comments may push PTX's .version. */
#define PTX_PREAMBLE_MAX ((size_t)64 << 10)

/* ---- bounded little-endian reads and checked arithmetic ---- */

static uint16_t rd16(const unsigned char *b) { return (uint16_t)(b[0] | (b[1] << 8)); }
static uint32_t rd32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t rd64(const unsigned char *b) { return (uint64_t)rd32(b) | (uint64_t)rd32(b + 4) << 32; }

/* *end = off + len if that fits in `bound`; false otherwise (also on overflow). */
static bool span_ok(uint64_t off, uint64_t len, uint64_t bound, uint64_t *end) {
  uint64_t e;
  if (__builtin_add_overflow(off, len, &e) || e > bound) return false;
  if (end) *end = e;
  return true;
}

/* *end = off + n * entsize, within `bound`. */
static bool table_ok(uint64_t off, uint64_t n, uint64_t entsize, uint64_t bound, uint64_t *end) {
  uint64_t len;
  if (__builtin_mul_overflow(n, entsize, &len)) return false;
  return span_ok(off, len, bound, end);
}

/* ---- what may be read ---- */

/* An image's bytes as the parsers see them: never read at or past b + avail,
 * and only the first `ok` bytes are known readable. A caller that knows its
 * buffer sets ok = avail; for a bare pointer ok grows, probe by probe, as the
 * headers ask for more. */
typedef struct {
  const unsigned char *b;
  size_t avail;
  size_t ok;
  const char *why; /* set when a probe said no */
} reader;

static reader trusted(const unsigned char *b, size_t avail) { return (reader){b, avail, avail, NULL}; }

/* NULL when [b, b + end) may be read; else why not (past_limit when end is
 * past avail). */
static const char *reach(reader *r, uint64_t end, const char *past_limit) {
  if (end > r->avail) return past_limit;
  if (end <= r->ok) return NULL;
  switch (cg_mem_check(r->b + r->ok, (size_t)end - r->ok)) {
  case CG_MEM_READABLE:
    r->ok = (size_t)end;
    return NULL;
  case CG_MEM_UNREADABLE:
    return r->why = "image runs into memory that is not readable";
  default:
    return r->why = "image memory could not be checked for readability";
  }
}

#define PROBE_BIG ((size_t)64 << 10)
#define PROBE_PAGE ((size_t)4 << 10)

/* The bytes up to the next multiple of `align` in address space after b + i
 * (capped at limit). */
static size_t step_end(const reader *r, size_t i, size_t align, size_t limit) {
  size_t e = i + (align - (size_t)((uintptr_t)(r->b + i) % align));
  return e < limit ? e : limit;
}

enum { TEXT_NUL, TEXT_LIMIT, TEXT_UNREADABLE };
/* Looks for the NUL that ends text at r->b, within limit bytes, making readable
 * as it goes (64 KiB at a time, then a page at a time near unreadable
 * memory). *len is the NUL's index, or where the search stopped. */
static int text_len(reader *r, size_t limit, size_t *len) {
  if (limit > r->avail) limit = r->avail;
  size_t i = 0;
  while (i < limit) {
    size_t e = step_end(r, i, PROBE_BIG, limit);
    if (reach(r, e, NULL)) {
      e = step_end(r, i, PROBE_PAGE, limit);
      if (reach(r, e, NULL)) {
        *len = i;
        return TEXT_UNREADABLE;
      }
    }
    const unsigned char *nul = memchr(r->b + i, '\0', e - i);
    if (nul) {
      *len = (size_t)(nul - r->b);
      return TEXT_NUL;
    }
    i = e;
  }
  *len = limit;
  return TEXT_LIMIT;
}

/* ---- result building ---- */

/* Kernel names are stored NUL-separated with one extra NUL after the last
 * (hence the -1 below), so iteration needs no length. Duplicates are dropped:
 * a fatbin repeats every kernel once per SASS arch. */
static void add_kernel(cg_image_info *out, const char *name, size_t len) {
  if (len == 0 || out->names_truncated) return;
  size_t used = 0;
  for (unsigned i = 0; i < out->n_kernels; i++) {
    const char *have = out->kernel_names + used;
    size_t hl = strlen(have);
    if (hl == len && memcmp(have, name, len) == 0) return;
    used += hl + 1;
  }
  if (len + 1 > sizeof out->kernel_names - 1 - used) {
    out->names_truncated = true;
    return;
  }
  memcpy(out->kernel_names + used, name, len);
  out->kernel_names[used + len] = '\0';
  out->kernel_names[used + len + 1] = '\0';
  out->n_kernels++;
}

/* Records each distinct arch once, in order of appearance. */
static void add_arch(cg_image_info *out, unsigned arch) {
  for (unsigned i = 0; i < out->n_archs; i++)
    if (out->archs[i] == arch) return;
  if (out->n_archs < CG_IMAGE_MAX_ARCHS) out->archs[out->n_archs++] = arch;
}

/* ---- cubin (ELF) ---- */

/* Parses the cubin r holds; sets *size and *arch and adds its entry kernels
 * to out. Returns NULL or the reason it is not a cubin we can trust. */
static const char *parse_cubin(reader *r, cg_image_info *out, size_t *size, unsigned *arch) {
  const unsigned char *b = r->b;
  size_t avail = r->avail;
  const char *why;
  if ((why = reach(r, ELF_EHDR_SIZE, "truncated ELF header"))) return why;
  if (b[4] != 2) return "ELF is not 64-bit";
  if (b[5] != 1) return "ELF is not little-endian";
  if (rd16(b + 18) != EM_CUDA) return "ELF is not a CUDA cubin (e_machine != 190)";
  unsigned osabi = b[7], abiver = b[8];
  uint32_t flags = rd32(b + 48);
  uint64_t phoff = rd64(b + 32), shoff = rd64(b + 40);
  unsigned phentsize = rd16(b + 54), phnum = rd16(b + 56);
  unsigned shentsize = rd16(b + 58), shnum = rd16(b + 60);

  if (phnum && phentsize != ELF_PHDR_SIZE) return "bad ELF program header entry size";
  if (shnum && shentsize != ELF_SHDR_SIZE) return "bad ELF section header entry size";
  if (shnum == 0 && shoff != 0) return "ELF extended section numbering not supported";

  uint64_t end = ELF_EHDR_SIZE, e;
  if (phnum) {
    if (!table_ok(phoff, phnum, ELF_PHDR_SIZE, avail, &e)) return "truncated ELF program header table";
    if (e > end) end = e;
  }
  if (shnum) {
    if (!table_ok(shoff, shnum, ELF_SHDR_SIZE, avail, &e)) return "truncated ELF section table";
    if (e > end) end = e;
  }
  /* The section table is read next (the program header table only counts
   * towards the size). */
  if (shnum && (why = reach(r, shoff + (uint64_t)shnum * ELF_SHDR_SIZE, NULL))) return why;
  /* Every section's bytes must lie inside what we may read; the image ends
   * where the last of them (or of the header tables) ends. */
  const unsigned char *sh = b + shoff;
  int symtab = -1;
  for (unsigned i = 0; i < shnum; i++) {
    const unsigned char *s = sh + (size_t)i * ELF_SHDR_SIZE;
    uint32_t type = rd32(s + 4);
    if (type == SHT_SYMTAB && symtab < 0) symtab = (int)i;
    if (type == SHT_NOBITS) continue;
    if (!span_ok(rd64(s + 24), rd64(s + 32), avail, &e)) return "truncated ELF section data";
    if (e > end) end = e;
  }
  /* Everything below (symbols, names, and the caller's hash) lies within. */
  if ((why = reach(r, end, NULL))) return why;
  *size = (size_t)end;
  /* Since CUDA 12 (ELF ABI 8, OSABI 0x41) the SM moved up one byte. */
  *arch = (osabi == 0x41 || abiver >= 8) ? (flags >> 8) & 0xffu : flags & 0xffu;

  if (symtab < 0) return NULL; /* no symbols: a cubin without kernels */
  const unsigned char *st = sh + (size_t)symtab * ELF_SHDR_SIZE;
  uint32_t link = rd32(st + 40);
  uint64_t symoff = rd64(st + 24), symsz = rd64(st + 32), symentsize = rd64(st + 56);
  if (symentsize != ELF_SYM_SIZE) return "bad ELF symbol entry size";
  if (link == 0 || link >= shnum) return "ELF symbol table links no string table";
  const unsigned char *strsh = sh + (size_t)link * ELF_SHDR_SIZE;
  if (rd32(strsh + 4) != SHT_STRTAB) return "ELF symbol table links no string table";
  /* Both were bounds-checked against avail above (neither is NOBITS). */
  const char *str = (const char *)b + rd64(strsh + 24);
  uint64_t strsz = rd64(strsh + 32);
  const unsigned char *syms = b + symoff;
  uint64_t nsym = symsz / ELF_SYM_SIZE;
  for (uint64_t i = 0; i < nsym; i++) {
    const unsigned char *sym = syms + i * ELF_SYM_SIZE;
    if ((sym[4] & 0xfu) != STT_FUNC || !(sym[5] & STO_CUDA_ENTRY)) continue;
    uint32_t name = rd32(sym);
    if (name >= strsz) return "ELF symbol name outside its string table";
    const char *nul = memchr(str + name, '\0', (size_t)(strsz - name));
    if (!nul) return "ELF symbol name not terminated in its string table";
    add_kernel(out, str + name, (size_t)(nul - (str + name)));
  }
  return NULL;
}

/* ---- PTX ---- */

static bool ptx_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static bool ptx_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '%';
}

/* Skips whitespace and comments from i; returns the first other index (<= n). */
static size_t ptx_skip(const char *t, size_t n, size_t i) {
  while (i < n) {
    if (ptx_space(t[i])) {
      i++;
    } else if (t[i] == '/' && i + 1 < n && t[i + 1] == '/') {
      while (i < n && t[i] != '\n') i++;
    } else if (t[i] == '/' && i + 1 < n && t[i + 1] == '*') {
      i += 2;
      while (i < n && !(t[i] == '*' && i + 1 < n && t[i + 1] == '/')) i++;
      i = i < n ? i + 2 : n;
    } else {
      break;
    }
  }
  return i;
}

static bool ptx_word_at(const char *t, size_t n, size_t i, const char *word) {
  size_t wl = strlen(word);
  return wl <= n - i && memcmp(t + i, word, wl) == 0 && (i + wl == n || !ptx_ident(t[i + wl]));
}

/* Does the text start, after comments and whitespace, with .version? Reads
 * byte by byte, never past n nor past a NUL. */
static bool ptx_recognised(const char *t, size_t n) {
  if (n > PTX_PREAMBLE_MAX) n = PTX_PREAMBLE_MAX;
  size_t len = 0;
  while (len < n && t[len] != '\0') len++;
  size_t i = ptx_skip(t, len, 0);
  return i < len && ptx_word_at(t, len, i, ".version");
}

/* Collects .entry names and the first .target sm_NN from n bytes of PTX. */
static void ptx_scan(const char *t, size_t n, cg_image_info *out, unsigned *arch) {
  size_t i = 0;
  while (i < n) {
    i = ptx_skip(t, n, i);
    if (i >= n) break;
    char c = t[i];
    if (c == '"') { /* .file "…" paths must not be mistaken for directives */
      i++;
      while (i < n && t[i] != '"' && t[i] != '\n') i++;
      i++;
      continue;
    }
    if (c != '.' || (i > 0 && (ptx_ident(t[i - 1]) || t[i - 1] == '.'))) {
      i++;
      continue;
    }
    if (ptx_word_at(t, n, i, ".entry")) {
      size_t j = ptx_skip(t, n, i + 6), k = j;
      while (k < n && ptx_ident(t[k])) k++;
      add_kernel(out, t + j, k - j);
      i = k > i + 6 ? k : i + 6;
    } else if (ptx_word_at(t, n, i, ".target")) {
      size_t j = ptx_skip(t, n, i + 7);
      if (*arch == 0 && n - j > 3 && memcmp(t + j, "sm_", 3) == 0) {
        unsigned v = 0;
        for (j += 3; j < n && t[j] >= '0' && t[j] <= '9' && v < 100000; j++) v = v * 10 + (unsigned)(t[j] - '0');
        *arch = v; /* sm_90a -> 90: the suffix stops the digits */
      }
      i = j > i + 7 ? j : i + 7;
    } else {
      i++;
    }
  }
}

/* ---- LZ4 (a fatbin entry's payload with flag 0x2000 is one raw LZ4 block) ---- */

/* Decodes the block src[0, n) into dst[0, cap); true and *len when it
 * decodes whole and fits. Every read and write is bounds-checked. */
static bool lz4_block(const unsigned char *src, size_t n, unsigned char *dst, size_t cap, size_t *len) {
  size_t i = 0, o = 0;
  while (i < n) {
    unsigned tok = src[i++];
    size_t lit = tok >> 4, b;
    if (lit == 15)
      do {
        if (i >= n) return false;
        b = src[i++];
        lit += b;
      } while (b == 255 && lit < n);
    if (lit > n - i || lit > cap - o) return false;
    memcpy(dst + o, src + i, lit);
    i += lit;
    o += lit;
    if (i == n) break; /* the last sequence is literals only */
    if (n - i < 2) return false;
    size_t off = (size_t)src[i] | (size_t)src[i + 1] << 8;
    i += 2;
    size_t match = tok & 15u;
    if (match == 15)
      do {
        if (i >= n) return false;
        b = src[i++];
        match += b;
      } while (b == 255 && match < cap);
    match += 4;
    if (off == 0 || off > o || match > cap - o) return false;
    for (size_t k = 0; k < match; k++, o++) dst[o] = dst[o - off]; /* may overlap: byte by byte */
  }
  *len = o;
  return true;
}

#define FATBIN_ENTRY_COMPRESSED_SIZE 0x10u   /* u32: the payload's compressed bytes */
#define FATBIN_ENTRY_UNCOMPRESSED_SIZE 0x38u /* u64: its size uncompressed */

/* The scratch a compressed entry of `want` bytes uncompressed needs: zstd
 * takes its decoder's tables there too, after the ELF, aligned. */
static uint64_t entry_room(uint64_t flags, uint64_t want) {
  if (!(flags & FATBIN_FLAG_ZSTD)) return want;
  return (want + 15) / 16 * 16 + sizeof(cg_zstd_work) + 16;
}

/* Names a compressed ELF entry's kernels from its decompressed ELF when the
 * caller gave room; else says how much room in out->unpack_room. A payload
 * that does not decode is left unnamed, never an error. */
static void name_compressed(const unsigned char *eh, const unsigned char *pl, size_t plen, cg_image_info *out,
                            unsigned char *scratch, size_t cap) {
  uint64_t flags = rd64(eh + 0x28), want = rd64(eh + FATBIN_ENTRY_UNCOMPRESSED_SIZE),
           clen = rd32(eh + FATBIN_ENTRY_COMPRESSED_SIZE);
  if (want > CG_IMAGE_MAX_BYTES) return;
  uint64_t room = entry_room(flags, want);
  if (clen > plen) clen = plen;
  if (!scratch || room > cap) {
    if (room > out->unpack_room) out->unpack_room = (size_t)room;
    return;
  }
  size_t got = 0, csize;
  unsigned carch;
  bool ok;
  if (flags & FATBIN_FLAG_ZSTD) {
    /* one zstd frame; the payload's size is rounded up to 8 past it */
    uintptr_t at = ((uintptr_t)scratch + (uintptr_t)(room - sizeof(cg_zstd_work) - 16) + 15) & ~(uintptr_t)15;
    cg_zstd_work *w = (cg_zstd_work *)at;
    ok = cg_zstd_decode(pl, (size_t)clen, scratch, (size_t)want, &got, w) == CG_ZSTD_OK;
  } else {
    ok = lz4_block(pl, (size_t)clen, scratch, (size_t)want, &got);
  }
  if (ok && got == want && got >= 4 && memcmp(scratch, "\177ELF", 4) == 0) {
    reader entry = trusted(scratch, got);
    (void)parse_cubin(&entry, out, &csize, &carch);
  }
}

/* ---- fatbin ---- */

static const char *parse_fatbin(reader *r, cg_image_info *out, size_t *size, unsigned char *scratch,
                                size_t cap) {
  const unsigned char *b = r->b;
  const char *why;
  if ((why = reach(r, FATBIN_HEADER_SIZE, "truncated fatbin header"))) return why;
  uint64_t hdr = rd16(b + 6), total;
  if (hdr < FATBIN_HEADER_SIZE) return "bad fatbin header size";
  if (!span_ok(hdr, rd64(b + 8), r->avail, &total)) return "truncated fatbin (size past the limit)";
  if ((why = reach(r, total, NULL))) return why;

  unsigned best_sass = 0;
  uint64_t off = hdr;
  while (off < total) {
    uint64_t ehs, payload, end;
    if (!span_ok(off, FATBIN_ENTRY_MIN_HEADER, total, NULL)) return "truncated fatbin entry header";
    const unsigned char *eh = b + off;
    unsigned kind = rd16(eh);
    ehs = rd32(eh + 4);
    if (ehs < FATBIN_ENTRY_MIN_HEADER) return "bad fatbin entry header size";
    if (!span_ok(off, ehs, total, &payload) || !span_ok(payload, rd64(eh + 8), total, &end))
      return "bad fatbin entry size";
    unsigned arch = rd32(eh + 0x1C);
    bool compressed = (rd64(eh + 0x28) & (FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD)) != 0;
    const unsigned char *pl = b + payload;
    size_t plen = (size_t)(end - payload);
    add_arch(out, arch);
    if (kind == FATBIN_KIND_ELF) {
      if (arch > best_sass) best_sass = arch;
      bool seen = false;
      for (unsigned i = 0; i < out->n_sass_archs; i++) seen |= out->sass_archs[i] == arch;
      if (!seen && out->n_sass_archs < CG_IMAGE_MAX_ARCHS) out->sass_archs[out->n_sass_archs++] = arch;
      if (!compressed) { /* compressed payloads: name_compressed, with scratch */
        size_t csize;
        unsigned carch;
        if (plen < 4 || memcmp(pl, "\177ELF", 4) != 0) return "fatbin ELF entry is not an ELF image";
        reader entry = trusted(pl, plen); /* inside total, already readable */
        if (parse_cubin(&entry, out, &csize, &carch)) return "fatbin holds a malformed ELF entry";
      } else {
        name_compressed(eh, pl, plen, out, scratch, cap);
      }
    } else if (kind == FATBIN_KIND_PTX) {
      out->has_ptx = true;
      if (!out->ptx_arch || arch < out->ptx_arch) out->ptx_arch = arch;
      if (!compressed) {
        if (!ptx_recognised((const char *)pl, plen)) return "fatbin PTX entry is not PTX text";
        const char *nul = memchr(pl, '\0', plen);
        unsigned parch = 0;
        ptx_scan((const char *)pl, nul ? (size_t)(nul - (const char *)pl) : plen, out, &parch);
      }
    }
    off = end;
  }
  *size = (size_t)total;
  out->sm_arch = best_sass;
  return NULL;
}

/* ---- entry points ---- */

static int fail(cg_image_info *out, const char *why) {
  memset(out, 0, sizeof *out);
  out->kind = CG_IMAGE_UNKNOWN;
  out->why_unknown = why;
  return -1;
}

/* Inspects one image that starts at r->b (no wrapper). */
static int inspect_image(reader *r, cg_image_info *out, unsigned char *scratch, size_t cap) {
  const unsigned char *b = r->b;
  const char *why;
  size_t size = 0, len = 0;
  bool magic = r->avail >= 4 && !reach(r, 4, NULL);
  if (r->why) return fail(out, r->why);
  if (magic && memcmp(b, "\177ELF", 4) == 0) {
    unsigned arch = 0;
    if ((why = parse_cubin(r, out, &size, &arch))) return fail(out, why);
    out->kind = CG_IMAGE_CUBIN;
    out->sm_arch = arch;
    add_arch(out, arch);
  } else if (magic && rd32(b) == FATBIN_MAGIC) {
    if ((why = parse_fatbin(r, out, &size, scratch, cap))) return fail(out, why);
    out->kind = CG_IMAGE_FATBIN;
  } else {
    /* PTX: recognition reads only the text that is there (up to its NUL, the
     * preamble's bound or unreadable memory); then the whole text must end. */
    text_len(r, PTX_PREAMBLE_MAX, &len);
    if (!ptx_recognised((const char *)b, len))
      return fail(out, len == 0 && r->why ? r->why : "not a cubin, fatbin or PTX image");
    int t = text_len(r, r->avail, &len);
    if (t == TEXT_UNREADABLE) return fail(out, "PTX text runs into memory that is not readable before its NUL");
    if (t == TEXT_LIMIT) return fail(out, "PTX text not NUL-terminated within the limit");
    size = len + 1;
    unsigned arch = 0;
    ptx_scan((const char *)b, size - 1, out, &arch);
    out->kind = CG_IMAGE_PTX;
    out->sm_arch = arch;
    if (arch) add_arch(out, arch);
  }
  out->data = b;
  out->size = size;
  out->hash = cg_hash_bytes(b, size);
  return 0;
}

int cg_image_inspect(const void *p, size_t limit, cg_image_info *out) {
  return cg_image_inspect_with(p, limit, out, NULL, 0);
}

int cg_image_inspect_with(const void *p, size_t limit, cg_image_info *out, void *scratch, size_t cap) {
  if (!out) return -1;
  memset(out, 0, sizeof *out);
  if (!p) return fail(out, "null image pointer");
  bool bare = limit >= CG_IMAGE_MAX_BYTES; /* only the pointer is known: probe before reading */
  size_t avail = bare ? CG_IMAGE_MAX_BYTES : limit;
  const unsigned char *b = p;
  reader r = trusted(b, avail);
  if (bare) r.ok = 0;

  if (r.avail >= 4 && !reach(&r, 4, NULL) && rd32(b) == FATBIN_WRAPPER_MAGIC) {
    /* {u32 magic, u32 version, const void *data, const void *filenames} */
    size_t wsize = 8 + 2 * sizeof(void *);
    if (reach(&r, wsize, "truncated fatbin wrapper")) return fail(out, r.why ? r.why : "truncated fatbin wrapper");
    const unsigned char *data;
    memcpy(&data, b + 8, sizeof data);
    if (!data) return fail(out, "fatbin wrapper has a null fatbin pointer");
    /* A caller that knows the buffer's bounds (limit below the maximum) gets
     * no read outside them: the fatbin must lie inside. A caller that only
     * has the pointer trusts it as the driver would. */
    reader d = {data, CG_IMAGE_MAX_BYTES, 0, NULL};
    if (!bare) {
      uintptr_t lo = (uintptr_t)b, dp = (uintptr_t)data;
      if (dp < lo || dp - lo >= avail) return fail(out, "fatbin wrapper points outside the limit");
      d = trusted(data, avail - (size_t)(dp - lo));
    }
    if (d.avail < 4 || reach(&d, 4, NULL) || rd32(data) != FATBIN_MAGIC)
      return fail(out, d.why ? d.why : "fatbin wrapper does not point to a fatbin");
    return inspect_image(&d, out, scratch, cap);
  }
  if (r.why) return fail(out, r.why);
  return inspect_image(&r, out, scratch, cap);
}

unsigned cg_image_arch_on(const cg_image_info *info, unsigned device_sm) {
  if (!info || !device_sm || info->kind != CG_IMAGE_FATBIN) return info ? info->sm_arch : 0;
  /* SASS runs on the same major version at the same or a higher minor */
  unsigned best = 0;
  for (unsigned i = 0; i < info->n_sass_archs; i++) {
    unsigned a = info->sass_archs[i];
    if (a / 10 == device_sm / 10 && a <= device_sm && a > best) best = a;
  }
  if (best) return best;
  return info->has_ptx && info->ptx_arch <= device_sm ? device_sm : info->sm_arch;
}

const char *cg_image_first_kernel(const cg_image_info *info) {
  if (!info || info->n_kernels == 0 || info->kernel_names[0] == '\0') return NULL;
  return info->kernel_names;
}

const char *cg_image_next_kernel(const cg_image_info *info, const char *name) {
  if (!info || !name) return NULL;
  const char *base = info->kernel_names, *lim = base + sizeof info->kernel_names;
  if (name < base || name >= lim) return NULL;
  const char *nul = memchr(name, '\0', (size_t)(lim - name));
  if (!nul || nul + 1 >= lim || nul[1] == '\0') return NULL;
  return nul + 1;
}

cg_hash128 cg_hash_bytes(const void *p, size_t n) {
  XXH128_hash_t h = XXH3_128bits(p, n);
  cg_hash128 r = {h.high64, h.low64};
  return r;
}

void cg_hash_format(cg_hash128 h, char out[33]) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[i] = hex[(h.hi >> (60 - 4 * i)) & 0xf];
    out[16 + i] = hex[(h.lo >> (60 - 4 * i)) & 0xf];
  }
  out[32] = '\0';
}

