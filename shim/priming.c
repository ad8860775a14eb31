#include "priming.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capguard/prime_file.h"
#include "config.h"
#include "driver.h"
#include "entry_points.h"
#include "guard.h"
#include "output.h"

/* Modules preloaded on one context, one slot per record of the set. */
typedef struct {
  CUcontext ctx;
  CUmodule *modules;
  bool *handed_out;
} context_pool;

#define MAX_CONTEXTS 64

static pthread_mutex_t prime_lock = PTHREAD_MUTEX_INITIALIZER;
static cg_prime_set *set;
static bool set_tried;
/* Set when the file was refused whole or an append failed: the reason was
 * said once, and every later append would only fail and say it again. */
static bool recording_off;
static context_pool pools[MAX_CONTEXTS];
static size_t n_pools;
static uint64_t n_loaded, n_served, n_recorded;

static bool priming_on(void) { return cg_cfg.mode == CG_RUN_GUARD && cg_cfg.prime_path[0]; }

/* The priming file code's lines already start with "capguard: ", and
 * cg_warn adds it again. */
static void warn_line(void *ctx, const char *line) {
  (void)ctx;
  static const char prefix[] = "capguard: ";
  if (strncmp(line, prefix, sizeof prefix - 1) == 0)
    line += sizeof prefix - 1;
  cg_warn("%s", line);
}

static context_pool *pool_of(CUcontext ctx) {
  for (size_t i = 0; i < n_pools; i++)
    if (pools[i].ctx == ctx)
      return &pools[i];
  return NULL;
}

static int device_arch(void) {
  CUdevice dev;
  int major = 0, minor = 0;
  if (!cg_drv.CtxGetDevice || !cg_drv.DeviceGetAttribute || cg_drv.CtxGetDevice(&dev) != CUDA_SUCCESS)
    return 0;
  if (cg_drv.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
      cg_drv.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS)
    return 0;
  return major * 10 + minor;
}

/* Whether a recorded image can load on a device of this arch: SASS must be
 * for exactly this arch; PTX JIT-compiles for this arch or newer. Records
 * that do not fit are skipped, never tried. */
static bool fits(const cg_prime_record *r, unsigned arch) {
  cg_image_info info;
  if (cg_image_inspect(r->bytes, r->size, &info))
    return false;
  if (info.kind == CG_IMAGE_PTX)
    return info.sm_arch <= arch;
  for (unsigned i = 0; i < info.n_archs; i++)
    if (info.archs[i] == arch)
      return true;
  return info.kind == CG_IMAGE_FATBIN && info.has_ptx;
}

static void preload(context_pool *p) {
  typedef CUresult (*load_fn)(CUmodule *, const void *);
  load_fn load = CG_REAL(cuModuleLoadData, load_fn);
  size_t n = cg_prime_count(set);
  p->modules = calloc(n ? n : 1, sizeof *p->modules);
  p->handed_out = calloc(n ? n : 1, sizeof *p->handed_out);
  if (!p->modules || !p->handed_out || !load)
    return;
  unsigned arch = (unsigned)device_arch();
  for (size_t i = 0; i < n; i++) {
    const cg_prime_record *r = cg_prime_get(set, i);
    if (!fits(r, arch))
      continue;
    CUresult res = load(&p->modules[i], r->bytes);
    if (res == CUDA_SUCCESS) {
      n_loaded++;
      continue;
    }
    p->modules[i] = NULL;
    char hash[33];
    cg_hash_format(r->hash, hash);
    cg_warn("priming record %.12s (%s) failed to load on this device (error %d); skipped", hash,
            r->n_kernels ? r->kernel_names : "no kernel names", (int)res);
  }
}

void cg_priming_before_begin(void) {
  if (!priming_on() || !cg_drv.CtxGetCurrent)
    return;
  CUcontext ctx = NULL;
  if (cg_drv.CtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
    return;
  pthread_mutex_lock(&prime_lock);
  bool may_preload = !pool_of(ctx) && n_pools < MAX_CONTEXTS && (!set_tried || (set && cg_prime_count(set)));
  pthread_mutex_unlock(&prime_lock);
  if (!may_preload)
    return;
  /* On a driver that refuses loads mid-capture, the capture gate (taken
   * before prime_lock, as on the load path) keeps any capture from beginning
   * between the check below and the loads. */
  bool gated = cg_driver_rules_loads();
  if (gated)
    cg_gate_lock();
  pthread_mutex_lock(&prime_lock);
  /* Loading while another thread's global capture prohibits this one would
   * be the very call that breaks captures: wait for a later begin. */
  if (!pool_of(ctx) && n_pools < MAX_CONTEXTS && cg_guard_self_unprohibited()) {
    if (!set_tried) {
      set_tried = true;
      set = NULL;
      /* Reading allocates the file's size: a file past the cap (grown by
       * hand, or a lowered cap) is not read into this process, and nothing
       * more is appended to it. */
      struct stat st;
      if (stat(cg_cfg.prime_path, &st) == 0 && (uint64_t)st.st_size > cg_cfg.prime_max) {
        cg_warn("priming file %s is %llu bytes, over CAPGUARD_PRIME_MAX (%llu): not loaded; "
                "prune it (capguard prime prune --max-size) or raise the cap",
                cg_cfg.prime_path, (unsigned long long)st.st_size, (unsigned long long)cg_cfg.prime_max);
        __atomic_store_n(&recording_off, true, __ATOMIC_RELAXED);
      } else if (cg_prime_load(cg_cfg.prime_path, &set, warn_line, NULL)) {
        set = NULL;
        __atomic_store_n(&recording_off, true, __ATOMIC_RELAXED);
      }
    }
    if (set && cg_prime_count(set)) {
      context_pool *p = &pools[n_pools++];
      p->ctx = ctx;
      preload(p);
    }
  }
  pthread_mutex_unlock(&prime_lock);
  if (gated)
    cg_gate_unlock();
}

CUmodule cg_priming_take(const cg_image_info *image) {
  if (!priming_on() || !cg_drv.CtxGetCurrent)
    return NULL;
  CUcontext ctx = NULL;
  if (cg_drv.CtxGetCurrent(&ctx) != CUDA_SUCCESS)
    return NULL;
  CUmodule m = NULL;
  pthread_mutex_lock(&prime_lock);
  context_pool *p = set ? pool_of(ctx) : NULL;
  const cg_prime_record *r = p && p->modules ? cg_prime_find(set, image->data, image->size) : NULL;
  if (r) {
    for (size_t i = 0; i < cg_prime_count(set); i++)
      if (cg_prime_get(set, i) == r && p->modules[i] && !p->handed_out[i]) {
        p->handed_out[i] = true;
        m = p->modules[i];
        n_served++;
        break;
      }
  }
  pthread_mutex_unlock(&prime_lock);
  return m;
}

void cg_priming_record(const cg_image_info *image) {
  if (!priming_on() || __atomic_load_n(&recording_off, __ATOMIC_RELAXED))
    return;
  uint32_t names_len = 0;
  for (const char *k = cg_image_first_kernel(image); k; k = cg_image_next_kernel(image, k))
    names_len += (uint32_t)strlen(k) + 1;
  uint64_t now = cg_now_ns();
  cg_prime_record r = {
      .kind = image->kind,
      .sm_arch = image->sm_arch,
      .hash = image->hash,
      .size = image->size,
      .bytes = image->data,
      .n_kernels = image->n_kernels,
      .names_len = names_len,
      .kernel_names = image->kernel_names,
      .hits = 1,
      .first_ns = now,
      .last_ns = now,
  };
  if (cg_prime_append(cg_cfg.prime_path, &r, cg_cfg.prime_max, warn_line, NULL) == 0)
    __atomic_add_fetch(&n_recorded, 1, __ATOMIC_RELAXED);
  else
    __atomic_store_n(&recording_off, true, __ATOMIC_RELAXED);
}

void cg_priming_summary(cg_summary *s) {
  pthread_mutex_lock(&prime_lock);
  s->primed_loaded = n_loaded;
  s->primed_served = n_served;
  s->primed_unused = n_loaded - n_served;
  s->recorded = n_recorded;
  pthread_mutex_unlock(&prime_lock);
}

void cg_priming_after_fork_child(void) {
  pthread_mutex_init(&prime_lock, NULL);
  /* The parent's modules live in the parent's contexts. */
  n_pools = 0;
  n_loaded = n_served = n_recorded = 0;
}
