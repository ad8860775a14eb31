/* Priming pools: what was preloaded before the first capture on each context,
 * and which of it has been handed out.
 *
 * Why one preloaded handle per load, and not one shared handle for every load
 * of the same bytes: a process that loads identical bytes twice (two Triton
 * specialisations compiling to the same cubin) expects two modules, each
 * with its own module globals (a __device__ variable written through one must
 * not change the other) and its own unload (unloading one must leave the
 * other's kernels launchable, including inside graphs already captured).
 * Sharing one module would break both, or need reference counts and faked
 * globals that change what the framework observes. So the priming file keeps
 * the most copies of each image one process had alive at once during
 * capture (load_tally.h), the preload makes that many real loads, each
 * mid-capture load gets one of them (exactly what a fresh load would have
 * given it, made earlier), and a served copy the program unloads is loaded
 * again before the next begin. The cost is memory for copies a run may not
 * use; they are counted as "unused" in the summary. */
#include "priming.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capguard/prime_file.h"
#include "config.h"
#include "device_arch.h"
#include "driver.h"
#include "entry_points.h"
#include "live_captures.h"
#include "load_tally.h"
#include "output.h"
#include "preload_load.h"
#include "record_queue.h"
#include "warn.h"
#include "locks.h"

typedef struct {
  void *handle; /* CUmodule or CUlibrary; NULL when its load failed */
  bool library;
  bool handed_out;
  bool refill;  /* handed out and since unloaded: loaded again before the next begin */
  cg_load_outputs *outputs; /* what the driver wrote into its output options, or NULL */
} pool_slot;

/* Handles preloaded on one context: record i owns slots first[i] ..
 * first[i + 1] - 1, its modules then its libraries. from[2 i + library]:
 * where a take of record i's modules (libraries) starts looking; every slot
 * of i before it is handed out, empty, or of the other kind, so a served
 * load costs the same whatever copies of its image were taken before it
 * (scanning from first[i] cost about 11 instructions a copy taken: +28k at
 * 2,400). A slot that can be served again (a refill) moves it back. It
 * shares first's allocation. */
typedef struct {
  CUcontext ctx;
  pool_slot *slots;
  size_t *first;
  size_t *from;
} context_pool;

static pthread_mutex_t prime_lock = PTHREAD_MUTEX_INITIALIZER;
static cg_prime_set *set;
/* Recording has a lock of its own: a thread waiting on the priming file's
 * lock must not keep other threads from being served. The appender indexes
 * the file once (from the set read at preload, when there is one) and then
 * reads only what other processes append. */
static pthread_mutex_t record_lock = PTHREAD_MUTEX_INITIALIZER;
static cg_prime_appender *appender;
static bool set_tried;
/* Set when the file was refused whole or an append failed: the reason was
 * said once, and every later append would only fail and say it again. */
static bool recording_off;
/* A served image counts as needed (attack 5 of docs/reliability.md: prune dropped every
 * image the runs were served, and the next run on 12.2 broke): each record
 * served in this process is marked when served (REFRESH_PENDING, a store
 * under prime_lock, nothing more on the capture's path) and its hit written
 * once per process (REFRESH_DONE) by cg_priming_refresh_served, outside any
 * capture. */
enum { REFRESH_NONE, REFRESH_PENDING, REFRESH_DONE };
static uint8_t *refresh_mark; /* one per record of set */
static size_t refresh_pending;
/* Served copies the program has unloaded since (refill): the file asks for
 * the most copies alive at once, so a copy served, unloaded and needed again
 * (one load and unload per capture) is loaded again before the next begin. */
static size_t refill_pending;
static size_t handed_out_now; /* served copies not yet unloaded: the unload path looks only when > 0 */
/* One pool per live context, however many: a pool goes when its context
 * ends (cg_priming_context_gone). Grown by doubling; out of memory, a new
 * context is not preloaded, said once. */
static context_pool *pools;
static size_t n_pools, cap_pools;
static uint64_t n_loaded, n_served, n_recorded, n_skipped_arch, n_refreshed;
/* What the file could serve here, found once when it was read (say_if_cannot_serve). */
static uint64_t n_file_images, n_usable_images;
static bool file_read;
static const char *cannot_serve;
static unsigned device_sm, skipped_sm;

/* Bumped, under prime_lock, by whatever may give a begin something to do
 * again (a pool made or gone, a served copy unloaded, the file read, a
 * fork). A thread whose begin on a context found nothing to do keeps the
 * count it found then: its next begins on that context, with the count
 * unchanged, leave after one load instead of taking prime_lock (about 140
 * instructions a begin, and a lock every capturing thread queued on). */
static unsigned long prime_epoch = 1;
static __thread struct {
  CUcontext ctx;
  unsigned long epoch;
} idle_for __attribute__((tls_model("initial-exec")));
static void prime_changed(void) { __atomic_add_fetch(&prime_epoch, 1, __ATOMIC_RELEASE); }

static bool priming_on(void) { return cg_cfg.mode == CG_RUN_GUARD && cg_cfg.prime_path[0]; }

/* The priming file code's lines already start with "capguard: ", and
 * cg_warn adds it again. */
static void warn_line(void *ctx, const char *line) {
  (void)ctx;
  static const char prefix[] = "capguard: ";
  if (strncmp(line, prefix, sizeof prefix - 1) == 0)
    line += sizeof prefix - 1;
  /* The file came from capguard run's --prime: the advice names that, not
   * the variable the user never set. */
  static const char env_advice[] = "set CAPGUARD_PRIME to ";
  const char *at = cg_cfg.prime_option ? strstr(line, env_advice) : NULL;
  if (at)
    cg_warn("%.*spass --prime %s", (int)(at - line), line, at + sizeof env_advice - 1);
  else
    cg_warn("%s", line);
}

/* A new pool, or NULL (said once) when there is no memory for one. */
static context_pool *new_pool(CUcontext ctx) {
  if (n_pools == cap_pools) {
    size_t cap = cap_pools ? 2 * cap_pools : 16;
    context_pool *grown = realloc(pools, cap * sizeof *grown);
    if (!grown) {
      cg_warn_oom("a priming pool for one more context");
      return NULL;
    }
    pools = grown;
    cap_pools = cap;
  }
  context_pool *p = &pools[n_pools];
  *p = (context_pool){.ctx = ctx};
  __atomic_store_n(&n_pools, n_pools + 1, __ATOMIC_RELEASE);
  prime_changed();
  return p;
}

bool cg_priming_has_pools(void) { return __atomic_load_n(&n_pools, __ATOMIC_ACQUIRE) != 0; }

static context_pool *pool_of(CUcontext ctx) {
  for (size_t i = 0; i < n_pools; i++)
    if (pools[i].ctx == ctx)
      return &pools[i];
  return NULL;
}


/* Whether a recorded image can load on a device of this arch: SASS must be
 * for exactly this arch; PTX JIT-compiles for this arch or newer. Records
 * that do not fit are skipped, never tried. Cubin and PTX records carry
 * their arch; only a fatbin needs its entries read. */
static bool fits(const cg_prime_record *r, unsigned arch) {
  if (r->kind == CG_IMAGE_CUBIN)
    return r->sm_arch == arch;
  if (r->kind == CG_IMAGE_PTX)
    return r->sm_arch <= arch;
  cg_image_info info;
  if (r->kind != CG_IMAGE_FATBIN || cg_image_inspect(r->bytes, r->size, &info))
    return false;
  for (unsigned i = 0; i < info.n_archs; i++)
    if (info.archs[i] == arch)
      return true;
  return info.has_ptx;
}

/* One copy of r into s, made as the recorded loads were (preload_load.h). */
static CUresult load_one(const cg_prime_record *r, pool_slot *s) {
  cg_load_outputs_free(s->outputs);
  s->outputs = NULL;
  return cg_preload_load(r, s->library, &s->handle, &s->outputs);
}

static void free_outputs(context_pool *p, size_t n_slots) {
  for (size_t k = 0; p->slots && k < n_slots; k++) {
    cg_load_outputs_free(p->slots[k].outputs);
    p->slots[k].outputs = NULL;
  }
}

static void preload(context_pool *p) {
  size_t n = cg_prime_count(set);
  p->first = calloc(3 * n + 1, sizeof *p->first);
  p->from = p->first ? p->first + n + 1 : NULL;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    const cg_prime_record *r = cg_prime_get(set, i);
    total += (size_t)r->module_loads + r->library_loads;
  }
  p->slots = calloc(total ? total : 1, sizeof *p->slots);
  if (!p->slots || !p->first) {
    free(p->slots), free(p->first);
    p->slots = NULL, p->first = NULL;
    cg_warn_oom("preloading the priming file");
    return;
  }
  unsigned arch = device_sm;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const cg_prime_record *r = cg_prime_get(set, i);
    p->first[i] = p->from[2 * i] = p->from[2 * i + 1] = at;
    if (!r->bytes || !fits(r, arch)) { /* no bytes: not kept, fitting another device (keep_fitting) */
      n_skipped_arch++;
      skipped_sm = r->sm_arch;
      at += (size_t)r->module_loads + r->library_loads;
      continue;
    }
    for (uint32_t k = 0; k < r->module_loads + r->library_loads; k++, at++) {
      pool_slot *s = &p->slots[at];
      s->library = k >= r->module_loads;
      CUresult res = load_one(r, s);
      if (res == CUDA_SUCCESS) {
        n_loaded++;
        continue;
      }
      s->handle = NULL;
      char hash[33];
      cg_hash_format(r->hash, hash);
      cg_warn("priming record %.12s (%s) failed to load on this device (error %d); skipped", hash,
              r->n_kernels ? r->kernel_names : "no kernel names", (int)res);
      at += r->module_loads + r->library_loads - k;
      break;
    }
  }
  p->first[n] = at;
}

/* After the first preload, the set keeps the bytes of the images that fit
 * this device only: what a served load is compared with and a refill loads
 * again. The rest of the file's copy is given back. */
static bool keep_fitting(const cg_prime_record *r, void *arch) { return fits(r, *(const unsigned *)arch); }

/* Reading allocates the file's size: a file past the cap (grown by hand, or
 * a lowered cap) is not read into this process, and nothing more is
 * appended to it. */
static void read_set(void) {
  set_tried = true;
  prime_changed();
  set = NULL;
  struct stat st;
  if (stat(cg_cfg.prime_path, &st) == 0 && (uint64_t)st.st_size > cg_cfg.prime_max) {
    /* facts only: capguard doctor --prime says what to do about it */
    cg_warn("priming file %s is %llu bytes, over CAPGUARD_PRIME_MAX (%llu): not loaded, nothing "
            "recorded into it (capguard doctor --prime FILE)",
            cg_cfg.prime_path, (unsigned long long)st.st_size, (unsigned long long)cg_cfg.prime_max);
    __atomic_store_n(&recording_off, true, __ATOMIC_RELAXED);
  } else if (cg_prime_load_copy(cg_cfg.prime_path, &set, cg_cfg.prime_said ? NULL : warn_line, NULL)) {
    /* a copy, not a mapping: the file may be rewritten in place while this
     * process runs (prime_in_memory.c); prime_said: capguard run said why,
     * once, before the command started */
    set = NULL;
    __atomic_store_n(&recording_off, true, __ATOMIC_RELAXED);
  } else if (cg_prime_count(set)) {
    refresh_mark = calloc(cg_prime_count(set), 1); /* NULL: served images are not refreshed */
  }
}

static void refill(context_pool *p);

/* The format version of a file refused whole, when it is a priming file's
 * header at all (0 otherwise): a newer capguard's is said as such. */
static unsigned refused_version(void) {
  uint8_t head[10];
  int fd = open(cg_cfg.prime_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, head, sizeof head);
  close(fd);
  if (n != (ssize_t)sizeof head || memcmp(head, "\x89" "CGP\r\n\x1a\n", 8) != 0)
    return 0;
  return (unsigned)head[8] | (unsigned)head[9] << 8;
}

/* The program of process pid as an identity names it (cg_prime_program_name). */
static void program_of(long pid, char *out, size_t cap) {
  char path[48], args[4096];
  out[0] = 0;
  snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  ssize_t n = read(fd, args, sizeof args - 1);
  close(fd);
  if (n <= 0)
    return;
  args[n] = 0; /* a command line longer than the buffer ends in its cut word */
  cg_prime_program_name(args, (size_t)n + 1, out, cap);
}

/* pid's parent, from /proc/PID/stat ("pid (comm) state ppid ..."; comm may
 * hold anything, so after its last ')'); 0 when unknown. */
static long parent_of(long pid) {
  char path[48], stat[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, stat, sizeof stat - 1);
  close(fd);
  stat[n > 0 ? n : 0] = 0;
  char *paren = strrchr(stat, ')');
  return paren && paren[1] == ' ' && paren[2] && paren[3] == ' ' ? strtol(paren + 4, NULL, 10) : 0;
}

/* Whether this process, or one that started it, runs the program the file
 * was learned from: a server's workers (multiprocessing's, a launcher's)
 * are its children and may be named otherwise. "" (not known here) is no
 * mismatch. The program this process runs goes into me. */
static bool learned_program_here(const char *learned, char *me, size_t cap) {
  char name[CG_PRIME_PROGRAM_MAX];
  program_of((long)getpid(), me, cap);
  if (!me[0] || !strcmp(me, learned))
    return true;
  long pid = (long)getppid();
  for (int depth = 0; depth < 8 && pid > 1; depth++, pid = parent_of(pid)) {
    program_of(pid, name, sizeof name);
    if (!strcmp(name, learned))
      return true;
  }
  return false;
}

/* Said once, when the file is first read, in one line of facts: a file
 * carried to this machine that cannot serve it (a fleet's cache that
 * arrived and is silently never used is the failure this names). */
static void say_if_cannot_serve(void) {
  file_read = true;
  if (!set) {
    unsigned v = refused_version();
    if (v > cg_prime_format_version())
      cannot_serve = "format"; /* the refusal's own warning said so (prime_io.c) */
    return;
  }
  n_file_images = cg_prime_count(set);
  for (size_t i = 0; i < n_file_images; i++)
    n_usable_images += device_sm && fits(cg_prime_get(set, i), device_sm);
  const cg_prime_identity *id = cg_prime_identity_of(set);
  char me[CG_PRIME_PROGRAM_MAX];
  if (id && id->program[0] && !learned_program_here(id->program, me, sizeof me)) {
    cannot_serve = "program";
    cg_warn("priming file %s cannot serve this process: it was learned from %s, this program is %s",
            cg_cfg.prime_path, id->program, me);
  } else if (n_file_images && device_sm && !n_usable_images) {
    cannot_serve = "arch";
    unsigned other = cg_prime_get(set, 0)->sm_arch;
    cg_warn("priming file %s cannot serve this process: none of its %llu image%s is built for this "
            "GPU's architecture (sm_%u; the file's first is sm_%u)",
            cg_cfg.prime_path, (unsigned long long)n_file_images, n_file_images == 1 ? "" : "s", device_sm,
            other);
  }
}


/* Set once a begin has nothing left to do here for good: the device's arch
 * is known (or cannot be asked) and there is no priming file, or it was read
 * and holds nothing (no pool is then ever made). Every begin of the process
 * then leaves with one load, instead of taking prime_lock: with many threads
 * capturing at once, that lock was a queue every begin joined. */
static bool begins_have_nothing_to_do;

void cg_priming_before_begin(CUcontext ctx) {
  if (cg_cfg.mode != CG_RUN_GUARD || !ctx || __atomic_load_n(&begins_have_nothing_to_do, __ATOMIC_ACQUIRE) ||
      (idle_for.ctx == ctx && idle_for.epoch == __atomic_load_n(&prime_epoch, __ATOMIC_ACQUIRE)))
    return;
  cg_lock(&prime_lock);
  /* The device's arch, for the arch rule and for the summary (capguard
   * prime learn names it): queries that are allowed during capture. */
  if (!device_sm)
    device_sm = cg_device_arch();
  context_pool *have = pool_of(ctx);
  bool may_preload = priming_on() && ((!have && (!set_tried || (set && cg_prime_count(set)))) ||
                                      (have && have->slots && refill_pending));
  bool arch_settled = device_sm || !cg_drv.CtxGetDevice || !cg_drv.DeviceGetAttribute;
  if (arch_settled && (!priming_on() || (set_tried && !(set && cg_prime_count(set)))))
    __atomic_store_n(&begins_have_nothing_to_do, true, __ATOMIC_RELEASE);
  if (!may_preload && arch_settled) {
    idle_for.ctx = ctx;
    idle_for.epoch = __atomic_load_n(&prime_epoch, __ATOMIC_RELAXED);
  }
  cg_unlock(&prime_lock);
  if (!may_preload)
    return;
  /* On a driver that refuses loads mid-capture, the capture gate (taken
   * before prime_lock, as on the load path) keeps any capture from beginning
   * between the check below and the loads. */
  bool gated = cg_driver_rules_loads();
  if (gated)
    cg_gate_lock();
  cg_lock(&prime_lock);
  /* Loading while another thread's global capture prohibits this one would
   * be the very call that breaks captures: wait for a later begin. */
  have = pool_of(ctx);
  if (priming_on() && have && have->slots && refill_pending && cg_captures_self_unprohibited())
    refill(have);
  else if (priming_on() && !have && cg_captures_self_unprohibited()) {
    if (!set_tried) {
      read_set();
      say_if_cannot_serve();
    }
    context_pool *p = set && cg_prime_count(set) ? new_pool(ctx) : NULL;
    if (p) {
      /* Before the first preload, not after it: a library preloaded with
       * CU_LIBRARY_BINARY_IS_PRESERVED may read its bytes until it is
       * unloaded, so they must be the ones kept for the process's life. */
      static bool kept_fitting;
      if (!kept_fitting) {
        kept_fitting = true;
        if (cg_prime_keep_only(set, keep_fitting, &device_sm) != 0)
          cg_warn_oom("keeping the priming file's images that fit: the whole file's copy is kept");
      }
      preload(p);
    }
  }
  cg_unlock(&prime_lock);
  if (gated)
    cg_gate_unlock();
}

/* The record of this load's bytes and options in set, or NULL. */
static const cg_prime_record *entry_of(const cg_image_info *image, const cg_load_opts *opts) {
  uint8_t enc[CG_LOAD_OPTS_MAX * CG_LOAD_OPT_BYTES];
  uint32_t n = opts ? opts->n : 0;
  if (n)
    cg_load_opts_encode(opts, enc);
  return cg_prime_find_hashed(set, image->hash, image->data, image->size, n ? enc : NULL, n);
}

/* How this load's options differ from those recorded for its bytes: from
 * the recorded entry nearest to them (the fewest options apart). Only on a
 * load not served, which is the capture's slow path already. */
static void say_differ(const cg_image_info *image, const cg_load_opts *asked, char *differ, size_t cap) {
  if (!cg_prime_find_bytes(set, image->hash, image->data, image->size))
    return;
  cg_load_opts best = {0}, recorded;
  unsigned best_d = UINT32_MAX;
  for (size_t i = 0; i < cg_prime_count(set); i++) {
    const cg_prime_record *r = cg_prime_get(set, i);
    if (r->size != image->size || r->hash.hi != image->hash.hi || r->hash.lo != image->hash.lo || !r->bytes ||
        cg_load_opts_decode(r->options, r->n_options, &recorded) || memcmp(r->bytes, image->data, image->size))
      continue;
    unsigned d = cg_load_opts_distance(&recorded, asked);
    if (d < best_d)
      best_d = d, best = recorded;
  }
  if (best_d != UINT32_MAX)
    cg_load_opts_diff(&best, asked, differ, cap);
}

void *cg_priming_take(const cg_image_info *image, bool library, const cg_load_key *key, char *differ,
                      size_t cap) {
  if (differ && cap)
    differ[0] = 0;
  if (!priming_on())
    return NULL;
  cg_tally_add(cg_tally_key(image->hash, key->opts), image->size, library);
  CUcontext ctx = NULL;
  if (!cg_drv.CtxGetCurrent || cg_drv.CtxGetCurrent(&ctx) != CUDA_SUCCESS)
    return NULL;
  void *h = NULL;
  cg_lock(&prime_lock);
  context_pool *p = set ? pool_of(ctx) : NULL;
  const cg_prime_record *r = p && p->slots ? entry_of(image, key->opts) : NULL;
  if (!r && p && p->slots && differ && cap)
    say_differ(image, key->opts, differ, cap);
  if (r) {
    size_t i = (size_t)(r - cg_prime_get(set, 0));
    size_t *from = &p->from[2 * i + library];
    bool none_before = true; /* no slot from *from to k serves a load of this kind */
    for (size_t k = *from; k < p->first[i + 1]; k++) {
      pool_slot *s = &p->slots[k];
      bool usable = s->handle && s->library == library && !s->handed_out;
      if (none_before && !usable)
        *from = k + 1;
      none_before = none_before && !usable;
      if (!usable || !cg_load_outputs_cover(s->outputs, key->raw))
        continue;
      if (*from == k) /* taken: nothing before it serves now */
        *from = k + 1;
      s->handed_out = true;
      h = s->handle;
      cg_load_outputs_write(s->outputs, key->raw);
      n_served++;
      __atomic_add_fetch(&handed_out_now, 1, __ATOMIC_RELAXED);
      if (refresh_mark && refresh_mark[i] == REFRESH_NONE) {
        refresh_mark[i] = REFRESH_PENDING;
        __atomic_add_fetch(&refresh_pending, 1, __ATOMIC_RELAXED);
      }
      break;
    }
  }
  cg_unlock(&prime_lock);
  if (h)
    cg_tally_handle(h, cg_tally_key(image->hash, key->opts), image->size, library, ctx);
  return h;
}

void cg_priming_loaded(void *handle, const cg_image_info *image, bool library, const cg_load_opts *opts) {
  CUcontext ctx = NULL;
  if (priming_on() && cg_drv.CtxGetCurrent && cg_drv.CtxGetCurrent(&ctx) == CUDA_SUCCESS)
    cg_tally_handle(handle, cg_tally_key(image->hash, opts), image->size, library, ctx);
}

void cg_priming_not_loaded(const cg_image_info *image, bool library, const cg_load_opts *opts) {
  if (priming_on())
    cg_tally_not_loaded(cg_tally_key(image->hash, opts), image->size, library);
}

void cg_priming_context_gone(CUcontext ctx) {
  cg_lock(&prime_lock);
  context_pool *p = pool_of(ctx);
  if (p) {
    size_t n = cg_prime_count(set);
    for (size_t k = 0; p->slots && k < p->first[n]; k++) {
      if (p->slots[k].handed_out)
        __atomic_sub_fetch(&handed_out_now, 1, __ATOMIC_RELAXED);
      if (p->slots[k].refill)
        refill_pending--;
    }
    if (p->slots)
      free_outputs(p, p->first[n]);
    free(p->slots);
    free(p->first);
    *p = pools[n_pools - 1]; /* the last one takes its place */
    __atomic_store_n(&n_pools, n_pools - 1, __ATOMIC_RELEASE);
    prime_changed();
  }
  cg_unlock(&prime_lock);
  /* The modules loaded on it (served or not) are gone: no longer alive. */
  cg_tally_context_gone(ctx);
}

void cg_priming_unloaded(void *handle) {
  cg_tally_unloaded(handle);
  if (!__atomic_load_n(&handed_out_now, __ATOMIC_RELAXED))
    return;
  cg_lock(&prime_lock);
  size_t n = cg_prime_count(set);
  for (size_t p = 0; p < n_pools; p++) {
    if (!pools[p].slots)
      continue;
    for (size_t k = 0; k < pools[p].first[n]; k++) {
      pool_slot *s = &pools[p].slots[k];
      if (s->handle != handle || !s->handed_out)
        continue;
      s->handle = NULL;
      s->handed_out = false;
      s->refill = true;
      refill_pending++;
      prime_changed();
      __atomic_sub_fetch(&handed_out_now, 1, __ATOMIC_RELAXED);
      cg_unlock(&prime_lock);
      return;
    }
  }
  cg_unlock(&prime_lock);
}

/* Loads again the served copies that were unloaded, on this context (gated
 * and under prime_lock, as the preload). */
static void refill(context_pool *p) {
  size_t n = cg_prime_count(set);
  for (size_t i = 0; i < n && refill_pending; i++) {
    const cg_prime_record *r = cg_prime_get(set, i);
    for (size_t k = p->first[i]; k < p->first[i + 1]; k++) {
      pool_slot *s = &p->slots[k];
      if (!s->refill)
        continue;
      s->refill = false;
      refill_pending--;
      if (load_one(r, s) == CUDA_SUCCESS) {
        n_loaded++;
        size_t *from = &p->from[2 * i + s->library];
        if (k < *from)
          *from = k; /* it can be served again */
      } else
        s->handle = NULL; /* said at the first preload if it fails for good */
    }
  }
}

/* prime_lock; at exit only when it can be had before the exit's deadline
 * (locks.h), else false, said in one line. */
static bool take_prime_lock(const char *what) { return cg_lock_or_exit_lock(&prime_lock, what); }

/* The appender, made on first use (record_lock held). */
static cg_prime_appender *the_appender(void) {
  if (!appender && take_prime_lock("writing to the priming file")) {
    appender = cg_prime_appender_new(cg_cfg.prime_path, cg_cfg.prime_max, set, warn_line, NULL);
    cg_unlock(&prime_lock);
  }
  return appender;
}

static void write_due(bool at_exit, bool broken);

void cg_priming_record(const cg_image_info *image, bool library, const cg_load_opts *opts, cg_verdict v) {
  if (!image || image->kind == CG_IMAGE_UNKNOWN || v == CG_VERDICT_SERVED || v == CG_VERDICT_FAILED)
    return;
  if (!priming_on() || cg_cfg.prime_readonly || __atomic_load_n(&recording_off, __ATOMIC_RELAXED))
    return;
  /* The record it will write refreshes the image too: no second one for
   * it; and one refreshed already (served, then loaded past the copies
   * preloaded) gets no second hit. */
  bool hit = true;
  cg_lock(&prime_lock);
  const cg_prime_record *known = refresh_mark ? entry_of(image, opts) : NULL;
  if (known) {
    size_t i = (size_t)(known - cg_prime_get(set, 0));
    if (refresh_mark[i] == REFRESH_PENDING)
      __atomic_sub_fetch(&refresh_pending, 1, __ATOMIC_RELAXED);
    hit = refresh_mark[i] != REFRESH_DONE;
    refresh_mark[i] = REFRESH_DONE;
  }
  cg_unlock(&prime_lock);
  /* Queued, written when a capture ends or at exit (record_queue.h): no
   * file I/O on the capture's path, one record per image and process. */
  if (!cg_record_queue_add(image, library, opts, hit))
    return;
  /* Refused: the captures that prohibit this thread are broken already, so
   * writing now costs none of them anything, and a host killed before the
   * end (the log then says the image was recorded) has it in the file. */
  if (v == CG_VERDICT_REFUSED || v == CG_VERDICT_EMULATED)
    write_due(false, true);
}

/* A queued image's record, through the appender (record_lock held): the
 * image (or its hit) the first time, else only a count of copies, when the
 * process needed more of them at once than the file states. Its first
 * record counts it recorded, with or without a hit: an image served and
 * refreshed, then loaded again while its copy was alive, is recorded as one
 * more copy (the summary's "recorded" is what the next run will have). */
static int write_queued(const cg_prime_record *r, bool hit, bool first, void *appender_) {
  int rc = hit ? cg_prime_appender_add(appender_, r) : cg_prime_appender_raise_loads(appender_, r);
  if (rc == 0 && first)
    __atomic_add_fetch(&n_recorded, 1, __ATOMIC_RELAXED);
  else if (rc < 0) /* said by the appender; every later write would fail the same way */
    __atomic_store_n(&recording_off, true, __ATOMIC_RELAXED);
  return rc;
}

static void write_due_now(bool at_exit, bool broken);

/* What cg_priming_refresh_served writes; broken: called from a refused load,
 * whose captures are broken already (the thread may still be inside them):
 * only the queue, waiting for a busy file as the exit does. Every capture's
 * end asks, and there is mostly nothing to write: that answer without the
 * writer's frame (six registers saved and restored). */
static void write_due(bool at_exit, bool broken) {
  if (!(at_exit || __atomic_load_n(&refresh_pending, __ATOMIC_RELAXED) || cg_record_queue_due()) || !priming_on() ||
      cg_cfg.prime_readonly || __atomic_load_n(&recording_off, __ATOMIC_RELAXED))
    return;
  write_due_now(at_exit, broken);
}

static __attribute__((noinline)) void write_due_now(bool at_exit, bool broken) {
  /* Never while a capture prohibits this thread: that is the capture's path. */
  if (!at_exit && !broken && !cg_captures_self_unprohibited())
    return;
  /* Another thread recording holds record_lock: it is left to a later end;
   * at exit, waited for a moment only (locks.h). */
  if (at_exit ? !cg_exit_lock(&record_lock, "writing to the priming file")
              : cg_trylock(&record_lock) != 0)
    return;
  cg_prime_appender *a = the_appender();
  if (a)
    cg_prime_appender_nowait(a, !at_exit && !broken); /* a busy file: at a later end, or at exit */
  if (a)
    cg_record_queue_drain(write_queued, a, at_exit ? CG_DRAIN_ALL : broken ? CG_DRAIN_FIRSTS : CG_DRAIN_DUE);
  else /* said when it could not be made */
    __atomic_store_n(&recording_off, true, __ATOMIC_RELAXED);
  size_t n = broken ? 0 : cg_prime_count(set);
  for (size_t i = 0; a && i < n; i++) {
    if (!take_prime_lock("writing to the priming file"))
      break;
    bool pending = refresh_mark && refresh_mark[i] == REFRESH_PENDING;
    cg_unlock(&prime_lock);
    if (!pending)
      continue;
    /* The record as the file has it (its loads, so no loads record is
     * written): the appender finds its image and appends one hit record. */
    cg_prime_record r = *cg_prime_get(set, i);
    r.hits = 1;
    r.last_ns = cg_now_ns();
    int rc = cg_prime_appender_add(a, &r);
    if (rc == 1 || !take_prime_lock("writing to the priming file"))
      break;
    refresh_mark[i] = REFRESH_DONE;
    cg_unlock(&prime_lock);
    __atomic_sub_fetch(&refresh_pending, 1, __ATOMIC_RELAXED);
    if (rc != 0) { /* said by the appender; every later write would fail the same way */
      __atomic_store_n(&recording_off, true, __ATOMIC_RELAXED);
      break;
    }
    __atomic_add_fetch(&n_refreshed, 1, __ATOMIC_RELAXED);
  }
  if (a)
    cg_prime_appender_nowait(a, false);
  cg_unlock(&record_lock);
}

void cg_priming_refresh_served(bool at_exit) { write_due(at_exit, false); }

void cg_priming_summary(cg_summary *s) {
  if (!take_prime_lock("the summary's priming counts"))
    return;
  s->primed_loaded = n_loaded;
  s->primed_served = n_served;
  s->primed_unused = n_loaded - n_served;
  s->recorded = n_recorded;
  s->primed_skipped_arch = n_skipped_arch;
  s->device_sm = device_sm;
  s->skipped_sm = skipped_sm;
  cg_unlock(&prime_lock);
}

void cg_priming_atfork_child(void) {
  pthread_mutex_init(&prime_lock, NULL);
  /* The appender's index describes the same file and stays right, unless a
   * parent thread was inside it at the fork: then it may be half updated,
   * and is left behind (leaked, not freed) for a fresh one. */
  if (cg_trylock(&record_lock) != 0)
    appender = NULL;
  pthread_mutex_init(&record_lock, NULL);
  /* The parent's modules live in the parent's contexts (their pools are
   * leaked, not freed: another thread may have been filling one). */
  pools = NULL;
  n_pools = cap_pools = 0;
  n_loaded = n_served = n_recorded = n_skipped_arch = n_refreshed = 0;
  refill_pending = handed_out_now = 0;
  /* A new process: what it is served is refreshed for it again. */
  if (refresh_mark)
    memset(refresh_mark, REFRESH_NONE, cg_prime_count(set));
  refresh_pending = 0;
  prime_changed(); /* the parent's thread's "nothing to do" is not the child's */
  cg_tally_reset();
  cg_record_queue_after_fork_child();
}

void cg_priming_fleet(cg_metrics_prime *out) {
  if (!take_prime_lock("the metrics' priming counts"))
    return;
  *out = (cg_metrics_prime){.read = file_read, .images = n_file_images, .usable = n_usable_images,
                            .served = n_served, .cannot_serve = cannot_serve};
  cg_unlock(&prime_lock);
}
