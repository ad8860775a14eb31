#include "breaker_targets.h"

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* A row as the fast path's holder writes it into the section
 * cg_breaker_targets: places relative to the fields themselves, so the
 * loader relocates nothing here. The section's bounds are weak: a build
 * without the fast paths (not x86-64) has none. */
typedef struct {
  uint32_t ep_offset;
  int32_t target, divert;
  uint32_t flags;
} breaker_target;
extern const breaker_target __start_cg_breaker_targets[] __attribute__((weak, visibility("hidden")));
extern const breaker_target __stop_cg_breaker_targets[] __attribute__((weak, visibility("hidden")));

static void **target_of(const breaker_target *t) { return (void **)((const char *)&t->target + t->target); }
static void *divert_of(const breaker_target *t) { return (void *)((const char *)&t->divert + t->divert); }

/* Once, when the driver is found (the settings are read by then). */
void cg_breaker_targets_publish(void *const *driver_fns) {
  for (const breaker_target *t = __start_cg_breaker_targets; t && t < __stop_cg_breaker_targets; t++) {
    void *real = driver_fns[t->ep_offset / sizeof(void *)];
    bool divert = !real || !(t->flags & CG_BT_FAST) || ((t->flags & CG_BT_FREES) && cg_cfg.stale);
    __atomic_store_n(target_of(t), divert ? divert_of(t) : real, __ATOMIC_RELEASE);
  }
}
