/* Images to record into the priming file, kept off the capture's path
 * (record_queue.h). A list of copies, one per image (hash, size, module or
 * library), never freed while the process runs: each is at most as large as
 * an image the program loaded during capture, and a later record of it
 * (more copies alive at once) needs its bytes again. */
#include "record_queue.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/clock.h"
#include "config.h"
#include "load_tally.h"
#include "locks.h"
#include "warn.h"

typedef struct queued {
  struct queued *next;
  cg_prime_record rec; /* bytes, kernel names and options owned here */
  cg_load_opts opts;   /* rec's options, decoded: the tally's key */
  bool library;
  uint32_t written;    /* copies stated by the last record written; 0: none yet */
  bool hit;            /* the first record counts a hit */
  bool writing;        /* handed to a drain, not back yet */
} queued;

/* Bounded as every table is: past either bound an image is not recorded
 * (one line says so). The file itself holds no more than CAPGUARD_PRIME_MAX. */
#define QUEUE_MAX_IMAGES 4096

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static queued *head;
static size_t n_queued;
static uint64_t bytes_queued;
static int full_said;
static int due; /* set by every add: a drain looks at the list */

static queued *find(cg_hash128 h, uint64_t size, bool library, const cg_load_opts *opts) {
  for (queued *q = head; q; q = q->next)
    if (q->rec.hash.hi == h.hi && q->rec.hash.lo == h.lo && q->rec.size == size && q->library == library &&
        cg_load_opts_equal(&q->opts, opts))
      return q;
  return NULL;
}

static queued *copy_of(const cg_image_info *image, bool library, const cg_load_opts *opts) {
  uint32_t names_len = 0;
  for (const char *k = cg_image_first_kernel(image); k; k = cg_image_next_kernel(image, k))
    names_len += (uint32_t)strlen(k) + 1;
  queued *q = calloc(1, sizeof *q);
  uint8_t *bytes = malloc(image->size + (size_t)opts->n * CG_LOAD_OPT_BYTES);
  char *names = malloc(names_len ? names_len : 1);
  if (!q || !bytes || !names) {
    free(q), free(bytes), free(names);
    return NULL;
  }
  q->opts = *opts;
  cg_load_opts_encode(opts, bytes + image->size); /* the options ride behind the bytes */
  memcpy(bytes, image->data, image->size);
  memcpy(names, image->kernel_names, names_len);
  q->rec = (cg_prime_record){
      .kind = image->kind,
      .sm_arch = image->sm_arch,
      .hash = image->hash,
      .size = image->size,
      .bytes = bytes,
      .n_kernels = image->n_kernels,
      .names_len = names_len,
      .kernel_names = names,
      .first_ns = cg_now_ns(),
      .n_options = opts->n,
      .options = opts->n ? bytes + image->size : NULL,
  };
  q->library = library;
  return q;
}

bool cg_record_queue_add(const cg_image_info *image, bool library, const cg_load_opts *opts, bool hit) {
  static const cg_load_opts none;
  if (!opts)
    opts = &none;
  cg_lock(&queue_lock);
  bool known = find(image->hash, image->size, library, opts) != NULL;
  /* the first image always (the file says when it cannot hold it) */
  bool room = n_queued < QUEUE_MAX_IMAGES && (!n_queued || bytes_queued + image->size <= cg_cfg.prime_max);
  cg_unlock(&queue_lock);
  if (!known && !room) {
    if (!__atomic_exchange_n(&full_said, 1, __ATOMIC_ACQ_REL))
      cg_warn("this process loaded more images during capture than it keeps to record (%d images, or "
              "CAPGUARD_PRIME_MAX bytes): the rest are not recorded in the priming file", QUEUE_MAX_IMAGES);
    return false;
  }
  if (!known) {
    /* copied outside the lock: an image may be megabytes */
    queued *q = copy_of(image, library, opts);
    if (!q) {
      cg_warn_oom("keeping an image to record into the priming file: it is not recorded");
      return false;
    }
    cg_lock(&queue_lock);
    if (find(image->hash, image->size, library, opts)) { /* another thread queued it meanwhile */
      free((void *)q->rec.bytes), free((void *)q->rec.kernel_names), free(q);
    } else {
      q->hit = hit;
      q->next = head;
      head = q;
      n_queued++;
      bytes_queued += image->size;
    }
    cg_unlock(&queue_lock);
  }
  __atomic_store_n(&due, 1, __ATOMIC_RELEASE);
  return true;
}

/* queue_lock; at exit only when it can be had before the exit's deadline
 * (locks.h), else false, said in one line. */
static bool take_queue_lock(void) { return cg_lock_or_exit_lock(&queue_lock, "recording into the priming file"); }

bool cg_record_queue_due(void) { return __atomic_load_n(&due, __ATOMIC_ACQUIRE); }

/* The copies the file should state for q: the most alive at once so far,
 * or 1 when unknown (the tally is full): never fewer than the default. */
static uint32_t wanted(const queued *q) {
  uint32_t n = cg_tally_get(cg_tally_key(q->rec.hash, &q->opts), q->rec.size, q->library);
  return n ? n : 1;
}

unsigned cg_record_queue_drain(cg_record_write_fn write, void *ctx, cg_drain_how how) {
  if (!__atomic_exchange_n(&due, 0, __ATOMIC_ACQ_REL) && how != CG_DRAIN_ALL)
    return 0;
  bool firsts_only = how == CG_DRAIN_FIRSTS;
  unsigned n = 0;
  bool grown_left = false;
  for (;;) {
    /* The next image due, taken under the lock, written outside it. */
    queued *q;
    uint32_t want = 0;
    if (!take_queue_lock())
      return n;
    for (q = head; q; q = q->next) {
      if (q->writing || (want = wanted(q)) <= q->written)
        continue;
      if (!firsts_only || q->written == 0)
        break;
      grown_left = true;
    }
    if (q)
      q->writing = true;
    cg_unlock(&queue_lock);
    if (!q) {
      if (grown_left) /* for the capture's end */
        __atomic_store_n(&due, 1, __ATOMIC_RELEASE);
      return n;
    }
    cg_prime_record r = q->rec;
    r.hits = 1;
    r.last_ns = cg_now_ns();
    r.module_loads = q->library ? 0 : want;
    r.library_loads = q->library ? want : 0;
    int rc = write(&r, q->written == 0 && q->hit, q->written == 0, ctx);
    if (!take_queue_lock())
      return n;
    q->writing = false;
    if (rc == 0)
      q->written = want;
    cg_unlock(&queue_lock);
    if (rc != 0) {
      if (rc == 1) /* left for a later end, or exit */
        __atomic_store_n(&due, 1, __ATOMIC_RELEASE);
      return n;
    }
    n++;
  }
}

void cg_record_queue_after_fork_child(void) {
  pthread_mutex_init(&queue_lock, NULL);
  head = NULL; /* the parent's copies are left behind, not freed: another of its threads may have held one */
  n_queued = 0;
  bytes_queued = 0;
  full_said = 0;
  due = 0;
}
