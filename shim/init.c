/* Start-up and exit. The constructor only reads settings and prepares;
 * libcuda is found lazily (driver.c), so a process that never uses CUDA pays
 * for nothing but this. */
#include <pthread.h>
#include <stdlib.h>

#include "break_rules.h"
#include "live_captures.h"
#include "query_fence.h"
#include "fast_path.h"
#include "locks.h"
#include "loader_gate.h"
#include "config.h"
#include "driver.h"
#include "driver_log_callback.h"
#include "forks.h"
#include "guard.h"
#include "hang_watch.h"
#include "names.h"
#include "other_copy.h"
#include "output.h"
#include "policy.h"
#include "priming.h"
#include "python_site.h"
#include "serving.h"
#include "stack.h"
#include "stale_watch.h"
#include "warn.h"

static void atfork_prepare(void) {
  /* First, before the others take the shim's locks: a walk of the
   * loader's list may be made with one of them held, and must end. */
  cg_loader_gate_atfork_prepare();
  cg_driver_atfork_prepare(); /* a resolve may take the others */
  cg_captures_atfork_prepare();
}
static void atfork_parent(void) {
  cg_captures_atfork_parent();
  cg_driver_atfork_parent();
  cg_loader_gate_atfork_parent();
}
static void atfork_child(void) {
  cg_loader_gate_atfork_child();
  cg_locks_atfork_child();
  cg_names_atfork_child();
  cg_driver_atfork_child();
  cg_forks_atfork_child();
  cg_captures_atfork_child();
  cg_captures_watched_atfork_child();
  cg_guard_atfork_child();
  cg_stale_atfork_child();
  cg_warn_atfork_child();
  cg_output_atfork_child();
  cg_priming_atfork_child();
  cg_policy_atfork_child();
  cg_python_site_atfork_child();
  cg_native_site_atfork_child();
  cg_native_where_atfork_child();
}

/* At the first driver use, not at start-up: warming the unwinder dlopens
 * libgcc_s, and registering for membarrier is a system call; a process
 * that never uses CUDA pays for neither (bench/instr_budget.py), and leaves
 * no log file of its own (the log is created here when it was not there).
 * All are done before any wrapper sees the driver, so that none happens
 * inside a driver call, every begin finds membarrier registered and no
 * record comes before the log. */
static void first_driver_use(void) {
  /* said here, once, not at start-up: a set-user-ID program that never uses
   * CUDA (su, ping, under /etc/ld.so.preload) hears nothing from capguard */
  if (cg_cfg.secure)
    cg_warn("secure execution (set-user-ID, set-group-ID or file capabilities): capguard takes no setting "
            "from the environment and writes no file (no log, no priming file, no metrics); it watches in "
            "guard mode and counts, on stderr");
  cg_output_open_deferred_log();
  cg_captures_init(); /* the model: no capture comes before the driver (2.8k of /bin/true's start-up) */
  cg_stack_init();
#if defined(__x86_64__)
  cg_query_fence_init(&cg_query_target, cg_query_divert_code);
#else
  cg_query_fence_init(NULL, NULL);
#endif
  cg_hang_watch_start(); /* CAPGUARD_HANG_S only */
}

/* glibc's dlsym is not looked for here: capguard's dlsym finds it at the
 * first call that passes one on (route/dlsym_hook.S), whether that comes
 * from another library's constructor, before this one, or later. */
__attribute__((constructor(101))) static void capguard_init(void) {
  /* A second copy of the shim stays silent: no warnings, no records (the
   * first copy writes them), every call passed through. */
  if (cg_other_copy_first()) {
    cg_cfg.mode = CG_RUN_OFF;
    return;
  }
  cg_config_load();
  if (cg_cfg.mode == CG_RUN_OFF)
    return;
  cg_driver_set_log_callback(cg_driver_log_callback);
  cg_driver_set_first_use(first_driver_use);
  cg_output_open_log();
  cg_hang_watch_setup(cg_cfg.hang_s); /* its thread waits for the first driver use */
  cg_serving_init();                  /* CAPGUARD_SERVING_AFTER */
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* At exit: only processes that used the driver say anything. */
__attribute__((destructor)) static void capguard_fini(void) {
  if (cg_cfg.mode == CG_RUN_OFF || !cg_driver_resolved())
    return;
  cg_guard_exit();
}
