/* DWARF line tables (dwarf_lines.h): the ELF section headers found with
 * pread, then .debug_line's units read one by one, each run as the line
 * number state machine until a row pair [row, next row) holds pc. Names in
 * DWARF 5's .debug_line_str / .debug_str are read at their offset alone
 * (one short pread), not whole sections. Every read is checked against the
 * bytes read: a hostile file is "no answer". */
#include "capguard/dwarf_lines.h"
#include "capguard/char_class.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where the object's bytes come from: a descriptor (pread) or memory. */
typedef struct {
  int fd;
  const unsigned char *mem;
  uint64_t size;
} source;

static bool read_at(const source *s, uint64_t off, void *out, size_t n) {
  if (off > s->size || n > s->size - off)
    return false;
  if (s->mem) {
    memcpy(out, s->mem + off, n);
    return true;
  }
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(s->fd, (char *)out + got, n - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false; /* the file shrank or cannot be read */
    got += (size_t)r;
  }
  return true;
}

/* A bounds-checked cursor over one unit's bytes: past its end every read
 * gives 0 and sets bad. */
typedef struct {
  const unsigned char *p, *end;
  bool bad;
} cursor;

static bool take(cursor *c, size_t n) {
  if (c->bad || (size_t)(c->end - c->p) < n) {
    c->bad = true;
    return false;
  }
  return true;
}
static uint64_t u(cursor *c, size_t n) { /* little-endian, n <= 8 */
  uint64_t v = 0;
  if (!take(c, n))
    return 0;
  for (size_t i = 0; i < n; i++)
    v |= (uint64_t)c->p[i] << (8 * i);
  c->p += n;
  return v;
}
static uint64_t uleb(cursor *c) {
  uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    if (!take(c, 1))
      return 0;
    unsigned char b = *c->p++;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      return v;
  }
}
static int64_t sleb(cursor *c) {
  uint64_t v = 0;
  unsigned shift = 0;
  unsigned char b = 0x80;
  while (b & 0x80) {
    if (!take(c, 1))
      return 0;
    b = *c->p++;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  }
  if (shift < 64 && (b & 0x40))
    v |= ~(uint64_t)0 << shift;
  return (int64_t)v;
}
static const char *cstr(cursor *c) { /* a NUL-terminated string in the unit */
  if (c->bad)
    return NULL;
  const unsigned char *nul = memchr(c->p, 0, (size_t)(c->end - c->p));
  if (!nul) {
    c->bad = true;
    return NULL;
  }
  const char *s = (const char *)c->p;
  c->p = nul + 1;
  return s;
}

/* The sections a lookup needs: offset and size in the file (0: absent);
 * the build ID's note finds a separate debug file. */
typedef struct {
  uint64_t line_off, line_size, line_str_off, line_str_size, str_off, str_size;
  uint64_t build_id_off, build_id_size;
} sections;

#define MAX_SHSTRTAB (1u << 20)

static bool find_sections(const source *s, sections *out) {
  Elf64_Ehdr eh;
  memset(out, 0, sizeof *out);
  if (!read_at(s, 0, &eh, sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
      eh.e_shstrndx >= eh.e_shnum)
    return false;
  size_t n = eh.e_shnum;
  Elf64_Shdr *sh = malloc(n * sizeof *sh);
  if (!sh)
    return false;
  char *names = NULL;
  bool ok = read_at(s, eh.e_shoff, sh, n * sizeof *sh);
  const Elf64_Shdr *ns = ok ? &sh[eh.e_shstrndx] : NULL;
  ok = ok && ns->sh_type != SHT_NOBITS && ns->sh_size > 0 && ns->sh_size <= MAX_SHSTRTAB &&
       (names = malloc(ns->sh_size + 1)) && read_at(s, ns->sh_offset, names, ns->sh_size);
  if (ok) {
    names[ns->sh_size] = '\0';
    for (size_t i = 0; i < n; i++) {
      /* compressed (SHF_COMPRESSED) and empty (a separate debug file's
       * placeholders, SHT_NOBITS) sections are left alone */
      if (sh[i].sh_name >= ns->sh_size || sh[i].sh_type == SHT_NOBITS || (sh[i].sh_flags & SHF_COMPRESSED))
        continue;
      const char *name = names + sh[i].sh_name;
      if (!strcmp(name, ".debug_line"))
        out->line_off = sh[i].sh_offset, out->line_size = sh[i].sh_size;
      else if (!strcmp(name, ".debug_line_str"))
        out->line_str_off = sh[i].sh_offset, out->line_str_size = sh[i].sh_size;
      else if (!strcmp(name, ".debug_str"))
        out->str_off = sh[i].sh_offset, out->str_size = sh[i].sh_size;
      else if (!strcmp(name, ".note.gnu.build-id"))
        out->build_id_off = sh[i].sh_offset, out->build_id_size = sh[i].sh_size;
    }
  }
  free(names);
  free(sh);
  return ok;
}

/* The header of one line program, as far as the state machine needs. */
typedef struct {
  unsigned version, offset_size, address_size;
  unsigned min_inst, line_range, opcode_base;
  int line_base;
  bool default_is_stmt;
  const unsigned char *opcode_lengths; /* opcode_base - 1 of them */
  const unsigned char *dirs;           /* directory table (v5: its format first) */
  const unsigned char *program, *end;
} header;

enum { FORM_block = 0x09, FORM_data1 = 0x0b, FORM_data2 = 0x05, FORM_data4 = 0x06, FORM_data8 = 0x07,
       FORM_data16 = 0x1e, FORM_string = 0x08, FORM_strp = 0x0e, FORM_line_strp = 0x1f, FORM_udata = 0x0f,
       FORM_strx = 0x1a, FORM_strx1 = 0x25, FORM_strx2 = 0x26, FORM_strx3 = 0x27, FORM_strx4 = 0x28 };

/* One attribute value of a DWARF 5 entry: a string (inline, or *str_off
 * set with *str_sec 1 for .debug_line_str, 2 for .debug_str) or a number. */
static void read_form(cursor *c, unsigned form, const header *h, const char **inline_str, uint64_t *str_off,
                      int *str_sec) {
  switch (form) {
  case FORM_string: *inline_str = cstr(c); break;
  case FORM_line_strp: *str_off = u(c, h->offset_size), *str_sec = 1; break;
  case FORM_strp: *str_off = u(c, h->offset_size), *str_sec = 2; break;
  case FORM_udata: (void)uleb(c); break;
  case FORM_data1: case FORM_strx1: (void)u(c, 1); break;
  case FORM_data2: case FORM_strx2: (void)u(c, 2); break;
  case FORM_strx3: (void)u(c, 3); break;
  case FORM_data4: case FORM_strx4: (void)u(c, 4); break;
  case FORM_data8: (void)u(c, 8); break;
  case FORM_data16: (void)u(c, 8), (void)u(c, 8); break;
  case FORM_strx: (void)uleb(c); break;
  case FORM_block: {
    uint64_t n = uleb(c);
    if (take(c, n > SIZE_MAX ? SIZE_MAX : (size_t)n))
      c->p += n;
    break;
  }
  default: c->bad = true; /* a form a line table does not use: stop */
  }
}

/* Reads one unit's header from c (positioned after unit_length). */
static bool read_header(cursor *c, unsigned offset_size, header *h) {
  memset(h, 0, sizeof *h);
  h->offset_size = offset_size;
  h->end = c->end;
  h->version = (unsigned)u(c, 2);
  if (h->version < 2 || h->version > 5)
    return false;
  h->address_size = 8;
  if (h->version >= 5) {
    h->address_size = (unsigned)u(c, 1);
    (void)u(c, 1); /* segment selector size */
  }
  uint64_t header_length = u(c, offset_size);
  if (c->bad || header_length > (uint64_t)(c->end - c->p))
    return false;
  h->program = c->p + header_length;
  h->min_inst = (unsigned)u(c, 1);
  if (h->version >= 4)
    (void)u(c, 1); /* maximum operations per instruction: VLIW only */
  h->default_is_stmt = u(c, 1) != 0;
  h->line_base = (int)(signed char)u(c, 1);
  h->line_range = (unsigned)u(c, 1);
  h->opcode_base = (unsigned)u(c, 1);
  if (c->bad || h->line_range == 0 || h->opcode_base == 0 || !take(c, h->opcode_base - 1))
    return false;
  h->opcode_lengths = c->p;
  c->p += h->opcode_base - 1;
  h->dirs = c->p;
  return c->p <= h->program;
}

/* The name of file number idx (as the rows say it) of the unit: a pointer
 * into the unit, or read into tmp from a string section. NULL when unknown. */
static const char *file_name(const source *s, const sections *sec, const header *h, uint64_t idx, char *tmp,
                             size_t tmpcap) {
  cursor c = {h->dirs, h->program, false};
  if (h->version < 5) {
    while (!c.bad) { /* include_directories: strings up to an empty one */
      const char *d = cstr(&c);
      if (!d || !*d)
        break;
    }
    for (uint64_t i = 1; !c.bad; i++) { /* file_names, numbered from 1 */
      const char *f = cstr(&c);
      if (!f || !*f)
        return NULL;
      (void)uleb(&c), (void)uleb(&c), (void)uleb(&c);
      if (i == idx)
        return c.bad ? NULL : f;
    }
    return NULL;
  }
  /* DWARF 5: a format (pairs of content type and form), then entries. */
  for (int table = 0; table < 2; table++) {
    unsigned nformat = (unsigned)u(&c, 1);
    uint64_t types[32], forms[32];
    if (nformat > 32)
      return NULL;
    for (unsigned k = 0; k < nformat; k++)
      types[k] = uleb(&c), forms[k] = uleb(&c);
    uint64_t count = uleb(&c);
    for (uint64_t i = 0; i < count && !c.bad; i++) {
      const char *path = NULL;
      uint64_t off = 0;
      int sec_kind = 0;
      for (unsigned k = 0; k < nformat && !c.bad; k++) {
        const char *str = NULL;
        uint64_t o = 0;
        int kind = 0;
        read_form(&c, (unsigned)forms[k], h, &str, &o, &kind);
        if (types[k] == 1) /* DW_LNCT_path */
          path = str, off = o, sec_kind = kind;
      }
      if (table == 0 || i != idx || c.bad)
        continue;
      if (path)
        return path;
      uint64_t base = sec_kind == 1 ? sec->line_str_off : sec_kind == 2 ? sec->str_off : 0;
      uint64_t size = sec_kind == 1 ? sec->line_str_size : sec_kind == 2 ? sec->str_size : 0;
      if (!size || off >= size || tmpcap < 2)
        return NULL;
      size_t want = size - off < tmpcap - 1 ? (size_t)(size - off) : tmpcap - 1;
      if (!read_at(s, base + off, tmp, want))
        return NULL;
      tmp[want] = '\0';
      return memchr(tmp, 0, want) ? tmp : NULL; /* a name longer than tmp: unknown */
    }
    if (c.bad)
      return NULL;
  }
  return NULL;
}

/* What running one unit's line program found: the row whose range
 * [address, next row's address) holds pc (found), and the addresses the
 * unit's rows cover, [lo, hi) (an index's entry). */
typedef struct {
  bool found;
  uint64_t file, line, lo, hi;
} program_result;

/* Runs the whole of the unit's line program (to the end: the unit's range
 * is wanted too). At one address the last row counts. */
static void run_program(const header *h, uint64_t pc, program_result *r) {
  cursor c = {h->program, h->end, false};
  uint64_t addr = 0, file = 1, line = 1;
  bool have_prev = false;
  uint64_t prev_addr = 0, prev_file = 0, prev_line = 0;
  r->found = false, r->lo = UINT64_MAX, r->hi = 0;
  /* a row at addr closes the previous row's range [prev_addr, addr) */
#define ROW()                                                                                             \
  do {                                                                                                    \
    if (have_prev && prev_addr < addr) {                                                                  \
      if (!r->found && prev_addr <= pc && pc < addr && prev_line > 0)                                     \
        r->found = true, r->file = prev_file, r->line = prev_line;                                        \
      if (prev_addr < r->lo)                                                                              \
        r->lo = prev_addr;                                                                                \
      if (addr > r->hi)                                                                                   \
        r->hi = addr;                                                                                     \
    }                                                                                                     \
    have_prev = true, prev_addr = addr, prev_file = file, prev_line = line;                               \
  } while (0)
  while (!c.bad && c.p < c.end) {
    unsigned op = (unsigned)u(&c, 1);
    if (op >= h->opcode_base) { /* special opcode */
      unsigned adj = op - h->opcode_base;
      addr += (uint64_t)(adj / h->line_range) * h->min_inst;
      line += (uint64_t)(int64_t)(h->line_base + (int)(adj % h->line_range));
      ROW();
      continue;
    }
    switch (op) {
    case 0: { /* extended */
      uint64_t len = uleb(&c);
      if (c.bad || len == 0 || len > (uint64_t)(c.end - c.p)) {
        c.bad = true;
        break;
      }
      const unsigned char *next = c.p + len;
      unsigned sub = (unsigned)u(&c, 1);
      if (sub == 1) { /* end_sequence */
        ROW();
        addr = 0, file = 1, line = 1, have_prev = false;
      } else if (sub == 2 && len - 1 <= 8) { /* set_address */
        addr = u(&c, (size_t)(len - 1));
      }
      c.p = next;
      break;
    }
    case 1: ROW(); break;                                        /* copy */
    case 2: addr += uleb(&c) * h->min_inst; break;               /* advance_pc */
    case 3: line += (uint64_t)sleb(&c); break;                   /* advance_line */
    case 4: file = uleb(&c); break;                              /* set_file */
    case 8: addr += (uint64_t)((255 - h->opcode_base) / h->line_range) * h->min_inst; break; /* const_add_pc */
    case 9: addr += u(&c, 2); break;                             /* fixed_advance_pc */
    default: /* column, stmt, basic block, prologue, epilogue, isa or unknown: skip its operands */
      for (unsigned k = 0; k < h->opcode_lengths[op - 1] && !c.bad; k++)
        (void)uleb(&c);
    }
  }
#undef ROW
  if (r->lo >= r->hi)
    r->lo = r->hi = 0; /* no range: never looked in again */
}

static bool put_answer(const char *file, uint64_t line, char *buf, size_t cap) {
  const char *slash = strrchr(file, '/');
  const char *base = slash ? slash + 1 : file;
  char digits[24];
  size_t nd = 0;
  do
    digits[nd++] = (char)('0' + line % 10);
  while ((line /= 10) && nd < sizeof digits);
  size_t blen = strlen(base);
  if (!blen || blen + 1 + nd + 1 > cap)
    return false;
  for (size_t i = 0; i < blen; i++) /* a name is printed: no control bytes */
    buf[i] = cg_is_control((unsigned char)base[i]) ? '?' : base[i];
  buf[blen] = ':';
  for (size_t i = 0; i < nd; i++)
    buf[blen + 1 + i] = digits[nd - 1 - i];
  buf[blen + 1 + nd] = '\0';
  return true;
}

/* One unit's place in .debug_line: where its length field starts, its
 * whole size, and how long its length field is (4, or 12 for 64-bit
 * DWARF). False at the table's end or on a corrupt length. */
typedef struct {
  uint64_t at, size;
  unsigned len_size;
} unit_place;

static bool place_unit(const source *s, const sections *sec, uint64_t at, unit_place *out) {
  unsigned char len[12];
  if (at + 4 > sec->line_size || !read_at(s, sec->line_off + at, len, 4))
    return false;
  uint64_t unit_len = (uint64_t)len[0] | (uint64_t)len[1] << 8 | (uint64_t)len[2] << 16 | (uint64_t)len[3] << 24;
  unsigned len_size = 4;
  if (unit_len == 0xffffffffu) { /* 64-bit DWARF */
    if (at + 12 > sec->line_size || !read_at(s, sec->line_off + at + 4, len + 4, 8))
      return false;
    unit_len = 0;
    for (int i = 11; i >= 4; i--)
      unit_len = unit_len << 8 | len[i];
    len_size = 12;
  } else if (unit_len >= 0xfffffff0u) {
    return false; /* reserved lengths */
  }
  uint64_t body = at + len_size;
  if (body > sec->line_size || unit_len > sec->line_size - body)
    return false;
  *out = (unit_place){at, len_size + unit_len, len_size};
  return true;
}

/* Reads and runs one unit; on a hit writes the answer into buf. The unit's
 * range goes into *lo, *hi. *budget: bytes a lookup may still read (0
 * when spent: the unit is not read). */
static bool look_in_unit(const source *s, const sections *sec, const unit_place *u_at, uint64_t pc,
                         uint64_t *budget, uint64_t *lo, uint64_t *hi, char *buf, size_t cap) {
  uint64_t unit_len = u_at->size - u_at->len_size;
  *lo = *hi = 0;
  /* every unit visited costs something: a table of many empty units is
   * bounded as a big one is */
  uint64_t cost = 64 + (unit_len <= CG_DWARF_UNIT_MAX ? unit_len : 0);
  if (cost > *budget) {
    *budget = 0;
    return false;
  }
  *budget -= cost;
  if (unit_len > CG_DWARF_UNIT_MAX)
    return false; /* too big to read: the others may still answer */
  unsigned char *unit = malloc(unit_len ? (size_t)unit_len : 1);
  if (!unit)
    return false;
  bool found = false;
  header h;
  program_result r = {0};
  cursor c = {unit, unit + unit_len, false};
  if (read_at(s, sec->line_off + u_at->at + u_at->len_size, unit, (size_t)unit_len) &&
      read_header(&c, u_at->len_size == 12 ? 8 : 4, &h)) {
    run_program(&h, pc, &r);
    *lo = r.lo, *hi = r.hi;
    if (r.found) {
      char tmp[256];
      const char *name = file_name(s, sec, &h, r.file, tmp, sizeof tmp);
      found = name && put_answer(name, r.line, buf, cap);
    }
  }
  free(unit);
  return found;
}

static void index_reset(cg_dwarf_index *ix, const struct stat *st) {
  free(ix->units);
  *ix = (cg_dwarf_index){.dev = (uint64_t)st->st_dev, .ino = (uint64_t)st->st_ino,
                         .size = (uint64_t)st->st_size, .mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 +
                                                                    st->st_mtim.tv_nsec};
}

static bool index_is_of(const cg_dwarf_index *ix, const struct stat *st) {
  return ix->size && ix->dev == (uint64_t)st->st_dev && ix->ino == (uint64_t)st->st_ino &&
         ix->size == (uint64_t)st->st_size &&
         ix->mtime_ns == (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* A unit's range kept in ix (whose units before ix->scanned are all kept,
 * in order); when the index is full it stops growing, and later lookups
 * scan on from where it stopped. */
static void index_add(cg_dwarf_index *ix, const unit_place *at, uint64_t lo, uint64_t hi) {
  if (!ix || at->at != ix->scanned)
    return;
  if (ix->n == ix->cap) {
    size_t want = ix->cap ? ix->cap * 2 : 64;
    if (want > CG_DWARF_INDEX_UNITS)
      return;
    cg_dwarf_unit *grown = realloc(ix->units, want * sizeof *grown);
    if (!grown)
      return;
    ix->units = grown, ix->cap = want;
  }
  ix->units[ix->n++] = (cg_dwarf_unit){at->at, at->size, lo, hi};
  ix->scanned = at->at + at->size;
}

/* ix: units already scanned (their ranges), or NULL. The units whose range
 * holds pc first, then every unit not yet scanned, in order. */
static bool lookup_in(const source *s, const sections *sec, cg_dwarf_index *ix, uint64_t pc, char *buf,
                      size_t cap) {
  if (!sec->line_size || sec->line_off > s->size || sec->line_size > s->size - sec->line_off)
    return false;
  uint64_t budget = CG_DWARF_LINES_MAX, lo, hi;
  for (size_t i = 0; ix && i < ix->n; i++) {
    if (pc < ix->units[i].lo || pc >= ix->units[i].hi)
      continue;
    unit_place at = {ix->units[i].off, ix->units[i].size, 0};
    if (place_unit(s, sec, at.at, &at) && at.size == ix->units[i].size &&
        look_in_unit(s, sec, &at, pc, &budget, &lo, &hi, buf, cap))
      return true;
  }
  unit_place at;
  for (uint64_t off = ix ? ix->scanned : 0; place_unit(s, sec, off, &at); off = at.at + at.size) {
    bool found = look_in_unit(s, sec, &at, pc, &budget, &lo, &hi, buf, cap);
    if (budget == 0)
      return found;
    index_add(ix, &at, lo, hi);
    if (found)
      return true;
  }
  return false;
}

static bool lookup(const source *s, cg_dwarf_index *ix, uint64_t pc, char *buf, size_t cap) {
  sections sec;
  return find_sections(s, &sec) && lookup_in(s, &sec, ix, pc, buf, cap);
}

/* ROOT/.build-id/ab/cdef....debug for the object's build ID (its GNU note:
 * namesz, descsz, type 3, "GNU", the ID), as gdb and Debian's -dbgsym
 * packages lay them out. False when there is none or it does not fit. */
static bool debug_file_path(const source *s, const sections *sec, const char *root, char *out, size_t cap) {
  unsigned char note[16 + 64];
  if (!root || !sec->build_id_size || sec->build_id_size > sizeof note ||
      !read_at(s, sec->build_id_off, note, (size_t)sec->build_id_size))
    return false;
  uint32_t namesz, descsz, type;
  memcpy(&namesz, note, 4), memcpy(&descsz, note + 4, 4), memcpy(&type, note + 8, 4);
  if (type != 3 || namesz != 4 || memcmp(note + 12, "GNU", 4) != 0 || descsz < 2 || descsz > 64 ||
      16 + descsz > sec->build_id_size)
    return false;
  static const char hex[] = "0123456789abcdef";
  size_t rlen = strlen(root), need = rlen + sizeof "/.build-id/" - 1 + 2 * descsz + 1 + sizeof ".debug";
  if (need > cap)
    return false;
  char *p = out;
  memcpy(p, root, rlen), p += rlen;
  memcpy(p, "/.build-id/", 11), p += 11;
  for (uint32_t i = 0; i < descsz; i++) {
    *p++ = hex[note[16 + i] >> 4], *p++ = hex[note[16 + i] & 15];
    if (i == 0)
      *p++ = '/';
  }
  memcpy(p, ".debug", sizeof ".debug");
  return true;
}

/* Opens path as a regular, non-empty file: its descriptor (-1: not). */
static int open_object(const char *path, struct stat *st) {
  /* O_NONBLOCK: a FIFO at the path must not block the open */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0 && (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_size <= 0)) {
    close(fd);
    fd = -1;
  }
  return fd;
}

bool cg_dwarf_line_in_memory(const void *data, size_t size, uint64_t pc, cg_dwarf_index *ix, char *buf,
                             size_t cap) {
  if (!buf || cap == 0)
    return false;
  buf[0] = '\0';
  source s = {-1, data, size};
  if (data && lookup(&s, ix, pc, buf, cap))
    return true;
  buf[0] = '\0';
  return false;
}

bool cg_dwarf_line_indexed(const char *path, const char *debug_root, uint64_t pc, cg_dwarf_index *ix, char *buf,
                           size_t cap) {
  if (!buf || cap == 0)
    return false;
  buf[0] = '\0';
  struct stat st;
  int fd = path ? open_object(path, &st) : -1;
  if (fd < 0)
    return false;
  source s = {fd, NULL, (uint64_t)st.st_size};
  sections sec;
  bool ok = find_sections(&s, &sec);
  char debug_path[512];
  if (ok && !sec.line_size && debug_file_path(&s, &sec, debug_root, debug_path, sizeof debug_path)) {
    /* no line table here: the one in its separate debug file, if installed */
    close(fd);
    fd = open_object(debug_path, &st);
    s = (source){fd, NULL, (uint64_t)st.st_size};
    ok = fd >= 0 && find_sections(&s, &sec);
  }
  if (ok && ix && !index_is_of(ix, &st))
    index_reset(ix, &st); /* another file, or this one changed */
  ok = ok && lookup_in(&s, &sec, ix, pc, buf, cap);
  if (fd >= 0)
    close(fd);
  if (!ok)
    buf[0] = '\0';
  return ok;
}

bool cg_dwarf_line_of(const char *path, uint64_t pc, char *buf, size_t cap) {
  return cg_dwarf_line_indexed(path, NULL, pc, NULL, buf, cap);
}

void cg_dwarf_index_free(cg_dwarf_index *ix) {
  if (!ix)
    return;
  free(ix->units);
  *ix = (cg_dwarf_index){0};
}
