/* The table of findings: every sentence capguard's commands say about what a
 * log means, each with the condition that makes it true and the commands
 * that act on it. Rows are in the order they are said. */
#include "findings.h"

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_types.h"
#include "kernel_display.h"
#include "name_cut.h"
#include "ended_early.h"
#include "offender.h"
#include "process_command.h"
#include "request_path.h"
#include "rerun_command.h"
#include "capture_totals.h"
#include "xalloc.h"
#include "plural.h"

#define WORDING "wording the findings" /* what an allocation that fails was doing */
#define xrealloc(p, n) cg_xrealloc((p), (n), WORDING)

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    s = NULL;
  va_end(ap);
  if (!s)
    cg_out_of_memory(WORDING);
  return s;
}

static const char *was_were(size_t n) { return n == 1 ? "was" : "were"; }

/* ---- what the rows look at, derived once per question ---- */

typedef struct {
  const cgf_facts *f;
  const cgr_analysis *a;
  const cgl_log *log;
  size_t latest, broke_run, allowed_run;
  size_t broken_loads, unwatched, not_said, other, first_other;
  size_t to_warm, unloads;
  /* Calls other than loads that broke a capture (refused, failed, broke):
   * priming serves loads only, so the next run breaks on them again. */
  size_t again, first_again, again_not_alloc;
  /* of those, the calls guard mode does not put off as it does unloads */
  size_t again_kept, first_again_kept;
  size_t most_refused; /* the most loads refused during capture in one process */
  /* loads during capture that broke (or would have: rescued) and whose image
   * names no kernel (a compressed fatbin), by image; and the loads the CUDA
   * runtime made lazily, at a kernel's first launch */
  size_t unnamed_images, lazy_loads;
  size_t lazy_run;
  /* calls during capture the driver failed (verdict failed): the error went
   * to the program, and a failed load is not recorded */
  size_t failed, failed_loads, first_failed;
  /* loads during capture made with an option capguard cannot reproduce
   * (never served, so never recorded: opt_name names one), and the run of
   * the latest: the advice's command */
  size_t opt_loads, opt_run;
  const char *opt_name;
  bool opt_lazy; /* one of them was the CUDA runtime's lazy loading */
  /* loads not served because their options differ from those recorded for
   * their bytes (recorded with theirs for the next run): how, for one */
  size_t differ_loads;
  const char *differ;
} ctx;

static void derive(const cgf_facts *f, ctx *c) {
  memset(c, 0, sizeof *c);
  c->f = f;
  c->a = f->a;
  c->log = f->log;
  if (!c->a)
    return;
  const cgr_analysis *a = c->a;
  c->log = a->log;
  /* The command in the advice is that of the run the advice is about: with
   * --all, the latest run in which it happened. */
  c->latest = c->log->n_runs ? c->log->n_runs - 1 : 0;
  c->broke_run = c->allowed_run = c->latest;
  for (size_t b = 0; b < a->n_broken; b++)
    c->broke_run = c->log->procs[c->log->caps[a->broken[b].capture].proc].run_index;
  for (size_t i = 0; i < c->log->n_evs; i++)
    if (c->log->evs[i].verdict == CG_VERDICT_ALLOWED)
      c->allowed_run = c->log->procs[c->log->evs[i].proc].run_index;
  /* What broke each capture (cgr_first_offender). */
  for (size_t b = 0; b < a->n_broken; b++) {
    cgl_offender off;
    switch (cgr_first_offender(c->log, a->broken[b].capture, a->broken[b].first_event, &off)) {
    case CGL_BY_UNWATCHED: c->unwatched++; break;
    case CGL_BY_UNKNOWN: c->not_said++; break;
    case CGL_BY_CALL:
      if (off.kind == CG_EV_MODULE_LOAD)
        c->broken_loads++;
      else if (!c->other++)
        c->first_other = b;
      break;
    }
  }
  for (size_t k = 0; k < a->n_kernels; k++)
    c->to_warm += a->kernels[k].broke;
  for (size_t i = 0; i < c->log->n_evs; i++) {
    const cgl_event *e = &c->log->evs[i];
    if (e->kind == CG_EV_MODULE_LOAD || !cg_verdict_breaks(e->verdict))
      continue;
    if (!c->again++)
      c->first_again = i;
    c->again_not_alloc += e->kind != CG_EV_ALLOCATION;
    if (e->kind != CG_EV_MODULE_UNLOAD && !c->again_kept++)
      c->first_again_kept = i;
  }
  for (size_t i = 0; i < c->log->n_evs; i++) {
    const cgl_event *e = &c->log->evs[i];
    if (e->verdict != CG_VERDICT_FAILED)
      continue;
    if (!c->failed++)
      c->first_failed = i;
    c->failed_loads += e->kind == CG_EV_MODULE_LOAD;
  }
  c->unloads = a->events[CG_EV_MODULE_UNLOAD];
  /* How far each process got past a refused load: a framework that raises at
   * the first (Triton does) refuses one a process, and a run learns one. */
  size_t *refused = calloc(c->log->n_procs + 1, sizeof *refused);
  for (size_t i = 0; refused && i < c->log->n_evs; i++) {
    const cgl_event *e = &c->log->evs[i];
    if (e->kind == CG_EV_MODULE_LOAD && e->verdict < CG_VERDICT_COUNT &&
        cg_verdict_breaks(e->verdict) && ++refused[e->proc] > c->most_refused)
      c->most_refused = refused[e->proc];
  }
  free(refused);
  const char **unnamed = calloc(c->log->n_evs + 1, sizeof *unnamed);
  for (size_t i = 0; i < c->log->n_evs; i++) {
    const cgl_event *e = &c->log->evs[i];
    if (e->kind != CG_EV_MODULE_LOAD || e->verdict >= CG_VERDICT_COUNT)
      continue;
    bool broke = cg_verdict_breaks(e->verdict) || e->verdict == CG_VERDICT_RESCUED;
    if (e->runtime_lazy && (broke || e->verdict == CG_VERDICT_ALLOWED)) {
      c->lazy_loads++;
      c->lazy_run = c->log->procs[e->proc].run_index;
    }
    if (e->with_options && cgr_offending(e)) {
      c->opt_loads++;
      c->opt_run = c->log->procs[e->proc].run_index;
      c->opt_lazy |= e->runtime_lazy;
      c->opt_name = cgl_event_rare(e)->options_foreign;
    }
    if (cgl_event_rare(e)->options_differ && cgr_offending(e)) {
      c->differ_loads++;
      c->differ = cgl_event_rare(e)->options_differ;
    }
    if (!broke || e->kernels->n || !unnamed)
      continue;
    bool seen = false;
    for (size_t k = 0; k < c->unnamed_images && !seen; k++)
      seen = e->image_hash && unnamed[k] == e->image_hash;
    if (!seen)
      unnamed[c->unnamed_images++] = e->image_hash;
  }
  free(unnamed);
}

static void command(cgf_finding *x, const char *sep, const char *lead, char *text) {
  x->commands[x->n_commands++] = (cgf_command){.sep = sep, .lead = lead, .text = text};
}

static char *rerun(const ctx *c, size_t run, const char *options) {
  char buf[1024];
  cgr_rerun_command_with(c->log, run, options, buf, sizeof buf);
  return xprintf("%s", buf);
}

static char *capguard_command(const ctx *c, size_t run, const char *head) {
  char buf[1024];
  cgr_command_for(c->log, run, head, NULL, false, buf, sizeof buf);
  return xprintf("%s", buf);
}

/* "HEAD --prime FILE -- CMD ARGS" for prime learn / check's own command. */
static char *prime_command(const cgf_prime_run *r, const char *head) {
  char buf[8192];
  size_t used = 0;
  buf[0] = '\0';
  /* head: several words, as given, its "capguard" as a shell here finds it */
  int n = snprintf(buf, sizeof buf, "%s%s --prime ", cgr_self_word(), head + strlen("capguard"));
  used = n > 0 && (size_t)n < sizeof buf ? (size_t)n : 0;
  cgr_shell_word(r->prime, buf, sizeof buf, &used);
  snprintf(buf + used, sizeof buf - used, " --");
  used = strlen(buf);
  for (char *const *w = r->cmd; w && *w; w++) {
    snprintf(buf + used, sizeof buf - used, " ");
    used = strlen(buf);
    cgr_shell_word(*w, buf, sizeof buf, &used);
  }
  return xprintf("%s", buf);
}

/* ---- the rows ---- */

typedef struct {
  const char *key;
  unsigned audience;
  bool (*holds)(const ctx *c);
  void (*say)(const ctx *c, cgf_finding *x);
} row;

/* -- run's summary of a log with nothing to analyse: the first that holds -- */

static bool incomplete_holds(const ctx *c) { return c->f->incomplete && *c->f->incomplete; }
static const char *shown(const ctx *c) { return c->f->log_shown ? c->f->log_shown : "the log"; }

static bool empty_incomplete_holds(const ctx *c) { return !c->log->records && incomplete_holds(c); }
static void empty_incomplete_say(const ctx *c, cgf_finding *x) {
  x->sentence = xprintf("the log %s holds nothing: %s, so capguard cannot say what happened; free "
                        "space or pass --log elsewhere, and run it again",
                        shown(c), c->f->incomplete);
}

static bool mode_off_holds(const ctx *c) { return !c->log->records && c->f->mode == CG_RUN_OFF; }
static void mode_off_say(const ctx *c, cgf_finding *x) {
  (void)c;
  x->sentence = xprintf("mode off: the shim stayed out of the way and logged nothing, as asked; "
                        "drop --mode off to check captures");
}

static bool shim_silent_holds(const ctx *c) { return !c->log->records; }
static void shim_silent_say(const ctx *c, cgf_finding *x) {
  x->sentence = xprintf("the shim wrote nothing to %s: the command did not load it (a static or "
                        "setuid program, or LD_PRELOAD cleared) or was killed before it exited; "
                        "check with capguard doctor",
                        shown(c));
}

static bool no_cuda_holds(const ctx *c) {
  const cgl_log *log = c->log;
  for (size_t p = 0; p < log->n_procs; p++)
    if (log->procs[p].cuda)
      return false;
  return !log->n_evs && !log->n_caps;
}
static void no_cuda_say(const ctx *c, cgf_finding *x) {
  const cgl_log *log = c->log;
  char cmd[96] = "";
  if (log->n_procs)
    cgr_process_command(&log->procs[log->n_runs ? log->runs[0].first_proc : 0], cmd, sizeof cmd);
  x->sentence = xprintf("no CUDA used: %zu process%s ran under the shim (%s), none loaded the CUDA "
                        "driver; nothing to check",
                        log->n_procs, cg_plural_es(log->n_procs), cmd[0] ? cmd : "?");
}

/* -- run's summary: a line each, after the broken captures -- */

static bool escaped_holds(const ctx *c) { return c->a->verdicts[CG_VERDICT_ESCAPED] != 0; }
static void escaped_say(const ctx *c, cgf_finding *x) {
  size_t n = c->a->verdicts[CG_VERDICT_ESCAPED];
  x->sentence = xprintf("%zu call%s escaped a capture: the driver said ok, but the graph will not do "
                        "what the program meant (see \"Escaped captures\" in capguard report)",
                        n, cg_plural(n));
  x->emphasis = strcspn(x->sentence, ":");
}

static bool open_at_exit_holds(const ctx *c) { return c->a->open_unbroken != 0; }
static void open_at_exit_say(const ctx *c, cgf_finding *x) {
  size_t n = c->a->open_unbroken;
  bool one = n == 1;
  x->sentence = xprintf("%zu capture%s still open when %s process exited: no graph was made (the "
                        "process exited, or was killed, before ending %s); capguard report shows "
                        "where %s began",
                        n, one ? " was" : "s were", one ? "its" : "their", one ? "it" : "them",
                        one ? "it" : "they");
}

/* An emulated driver newer than the real one: the driver's own rules applied. */
static bool emulate_newer_holds(const ctx *c) {
  for (size_t p = 0; p < c->log->n_procs; p++) {
    const cgl_process *pr = &c->log->procs[p];
    if (cgl_process_num(pr, CGL_PR_DRIVER_VERSION) > 0 &&
        cgl_process_num(pr, CGL_PR_EMULATE_DRIVER) > cgl_process_num(pr, CGL_PR_DRIVER_VERSION))
      return true;
  }
  return false;
}
static void emulate_newer_say(const ctx *c, cgf_finding *x) {
  const cgl_process *pr = c->log->procs;
  for (size_t p = 0; p < c->log->n_procs; p++)
    if (cgl_process_num(&c->log->procs[p], CGL_PR_DRIVER_VERSION) > 0 &&
        cgl_process_num(&c->log->procs[p], CGL_PR_EMULATE_DRIVER) >
            cgl_process_num(&c->log->procs[p], CGL_PR_DRIVER_VERSION))
      pr = &c->log->procs[p];
  x->sentence =
      xprintf("--emulate-driver %lld is newer than this driver (%lld): capguard can "
              "refuse what an older driver refuses, not allow what this one refuses, so "
              "it emulated nothing; the driver's own rules applied",
              cgl_process_num(pr, CGL_PR_EMULATE_DRIVER), cgl_process_num(pr, CGL_PR_DRIVER_VERSION));
}

/* -- the text report's "Escaped captures" section: what each kind means to do -- */

static void escapes_note_say(const ctx *c, cgf_finding *x) {
  (void)c;
  x->sentence = xprintf("legacy-stream: run once, now, outside the graph: replays will not do it (use "
                        "the capturing stream, or make it before the capture); pageable-copy: each "
                        "replay copies from or into that host memory as it is then (use page-locked "
                        "memory)");
}

/* -- run's summary, "next:" -- */

/* recorded_unsaid: a process killed before its summary still recorded what it loaded */
static bool recorded_holds(const ctx *c) {
  return (c->a->recorded || c->a->recorded_unsaid) && c->f->mode == CG_RUN_GUARD && !c->f->prime_readonly;
}
/* The images this run recorded, and the names of up to four of their kernels. */
typedef struct {
  char names[160];
  size_t shown;   /* kernels named in names */
  size_t kernels; /* kernels recorded (more than shown: "...") */
  size_t images;
  size_t copies;  /* images the file held already: the run loaded the same bytes again */
} recorded_set;
static void recorded_images(const ctx *c, recorded_set *r) {
  char *names = r->names;
  const cgr_analysis *a = c->a;
  const cgl_log *log = c->log;
  /* The kernels of the loads this run recorded (every offending load is recorded in guard mode). */
  size_t used = 0, shown = 0, recorded_kernels = 0;
  char disp[CG_KERNEL_DISPLAY_MAX], prev[CG_KERNEL_DISPLAY_MAX] = "";
  names[0] = '\0';
  for (size_t k = 0; k < a->n_kernels; k++) {
    if (a->kernels[k].loads == a->kernels[k].served + a->kernels[k].with_options)
      continue; /* served, or made with options: not recorded */
    recorded_kernels++;
    if (shown == 4)
      continue;
    /* a template's instances read alike: named once */
    cg_kernel_display(a->kernels[k].name, disp, sizeof disp);
    if (shown && !strcmp(disp, prev))
      continue;
    memcpy(prev, disp, sizeof prev);
    int n = snprintf(names + used, sizeof r->names - used, "%s%s", shown ? ", " : "", disp);
    if (n < 0 || (size_t)n >= sizeof r->names - used) {
      names[used] = '\0'; /* no name cut in half: it is counted in "..." */
      if (!shown) /* but the first one's start, or kernels would read as not named */
        used = cg_name_cut(names, sizeof r->names, disp), shown = 1;
      else
        shown = 4;
      continue;
    }
    used += (size_t)n;
    shown++;
  }
  /* Images, not recordings: workers that load the same image record it once. */
  size_t images = 0, copies = 0;
  const char **seen = calloc(log->n_evs + 1, sizeof *seen);
  for (size_t i = 0; seen && i < log->n_evs; i++) {
    const cgl_event *e = &log->evs[i];
    bool dup = !e->image_hash || !cgr_offending(e) || e->kind != CG_EV_MODULE_LOAD || e->with_options;
    for (size_t k = 0; k < images && !dup; k++)
      dup = seen[k] == e->image_hash; /* interned: equal strings are equal pointers */
    if (dup)
      continue;
    seen[images++] = e->image_hash;
    /* The same bytes served to this process earlier: the file held the image,
     * one copy short (identical specialisations loaded again). */
    bool served = false;
    for (size_t j = 0; j < log->n_evs && !served; j++)
      served = log->evs[j].verdict == CG_VERDICT_SERVED && log->evs[j].image_hash == e->image_hash &&
               log->evs[j].proc == e->proc;
    copies += served;
  }
  free(seen);
  if (!images) /* loads logged without an image: the processes' own count */
    images = a->recorded;
  r->shown = shown;
  r->kernels = recorded_kernels;
  r->images = images;
  r->copies = copies;
}

static const char *options_too(const ctx *c, char *buf, size_t cap);
static void recorded_say(const ctx *c, cgf_finding *x) {
  const cgl_log *log = c->log;
  recorded_set r;
  recorded_images(c, &r);
  const char *prime = cgr_run_prime_path(log, c->latest);
  char cmd[1024];
  bool whole = cgr_rerun_command(log, c->latest, CG_RUN_MODE_COUNT, cmd, sizeof cmd);
  const char *where = *prime ? prime : "the priming file";
  const char *more = r.kernels > r.shown ? ", ..." : "";
  if (r.copies && r.copies == r.images)
    /* the file held them: the run needed more copies of the same bytes */
    x->sentence = xprintf("run it again; the file already held the image%s loaded during capture "
                          "(kernels %s%s), but the run loaded the same bytes again while a copy "
                          "was still loaded (identical Triton specialisations do): one more copy "
                          "of %s, recorded in %s, will be loaded before capture",
                          cg_plural(r.images), r.names[0] ? r.names : "not named: a compressed fatbin", more,
                          r.images == 1 ? "it" : "each", where);
  else
    x->sentence = xprintf("run it again; the %zu image%s loaded during capture, recorded in %s "
                          "(kernels %s%s), will be loaded before capture%s",
                          r.images, cg_plural(r.images), where,
                          r.names[0] ? r.names : "not named: a compressed fatbin", more,
                          r.copies ? " (some of them another copy of an image the file already "
                                   "held: the same bytes loaded again)"
                                 : "");
  char opts[256];
  if (c->opt_loads) {
    char *t = xprintf("%s%s", x->sentence, options_too(c, opts, sizeof opts));
    free(x->sentence);
    x->sentence = t;
  }
  command(x, NULL, NULL, xprintf("%s", cmd));
  if (!whole)
    x->commands[0].note = "the logged command line was cut: complete it";
}

/* Recorded, but another call broke the capture too: "run it again" would break again. */
static bool breaks_again_holds(const ctx *c) { return recorded_holds(c) && c->again; }
static void breaks_again_say(const ctx *c, cgf_finding *x) {
  recorded_set r;
  recorded_images(c, &r);
  const cgl_event *e = &c->log->evs[c->first_again];
  const char *prime = cgr_run_prime_path(c->log, c->latest);
  const char *kind = cgl_word(&cg_event_kinds, e->kind);
  x->sentence = xprintf("the %zu image%s loaded during capture %s recorded in %s, but a run again "
                        "would break again: %zu other call%s broke %s (first %s, %s, pid %lld), "
                        "and priming serves only loads; make %s before the capture begins or after "
                        "it ends (the broken: lines and the report say where)",
                        r.images, cg_plural(r.images), was_were(r.images),
                        *prime ? prime : "the priming file", c->again, cg_plural(c->again),
                        c->a->n_broken > 1 ? "captures" : "the capture", e->call ? e->call : "?",
                        kind ? kind : "?", c->log->procs[e->proc].pid, c->again == 1 ? "it" : "them");
  if (!c->again_not_alloc) /* --rescue makes a prohibited allocation in relaxed mode */
    command(x, "; ", "or capture in one run, each refused load and allocation made in relaxed mode",
            rerun(c, c->latest, "--rescue"));
}

static bool no_load_broke_holds(const ctx *c) {
  return c->a->n_broken && !c->a->offending_loads && !c->unloads;
}
static void no_load_broke_say(const ctx *c, cgf_finding *x) {
  (void)c;
  /* nothing to record or prime: the fix is in the program */
  x->sentence = xprintf("no module load broke a capture, so priming cannot help: make the call "
                        "each broken: line names before its capture begins or after it ends; for "
                        "a capture broken by a call capguard does not watch, look at the code "
                        "between where it began and where it ended");
}

static bool guard_mode_holds(const ctx *c) {
  return (c->a->n_broken || c->a->offending_loads || c->unloads) && c->f->mode != CG_RUN_GUARD;
}
static void guard_mode_say(const ctx *c, cgf_finding *x) {
  x->sentence = xprintf("run it in guard mode (the default) to record the images and prime them "
                        "on the run after");
  char cmd[1024];
  cgr_rerun_command(c->log, c->latest, CG_RUN_MODE_COUNT, cmd, sizeof cmd);
  command(x, NULL, NULL, xprintf("%s", cmd));
}

/* A priming file run refused before the start (not trusted, not readable):
 * it may hold every image this run loaded, so the way on is to fix what was
 * said, never to add what it may already hold. */
static bool prime_refused_holds(const ctx *c) {
  return c->f->prime_unusable && c->f->mode == CG_RUN_GUARD && (c->a->n_broken || c->a->offending_loads);
}
static void prime_refused_say(const ctx *c, cgf_finding *x) {
  const char *prime = cgr_run_prime_path(c->log, c->latest);
  x->sentence = xprintf("the priming file %s was not used: capguard refused it before the command "
                        "started, for the reason said there, so nothing was served from it or "
                        "recorded into it; make the fix said there, then run it again",
                        *prime ? prime : "in use");
  char word[4200] = "";
  size_t used = 0;
  if (*prime)
    cgr_shell_word(prime, word, sizeof word, &used);
  command(x, NULL, NULL, xprintf("%s doctor%s%s", cgr_self_word(), *prime ? " --prime " : "", word));
}

/* A read-only fleet file that lacks what this run loaded: where to add it. */
static bool readonly_holds(const ctx *c) {
  return c->f->prime_readonly && !c->f->prime_unusable && c->f->mode == CG_RUN_GUARD &&
         (c->a->n_broken || c->a->offending_loads);
}
static void readonly_say(const ctx *c, cgf_finding *x) {
  const cgr_analysis *a = c->a;
  char arch[128] = "";
  recorded_set r;
  recorded_images(c, &r);
  const char *prime = cgr_run_prime_path(c->log, c->latest);
  if (a->skipped_arch)
    snprintf(arch, sizeof arch, "; its %zu record%s built for sm_%lld, this GPU is sm_%lld",
             a->skipped_arch, a->skipped_arch == 1 ? " is" : "s are", a->skipped_sm, a->device_sm);
  x->sentence = xprintf("the priming file %s is read-only (CAPGUARD_PRIME_READONLY=1) and lacks the "
                        "%zu image%s loaded during capture (kernels %s%s), so nothing was recorded%s; "
                        "add %s where the file is written, on this GPU architecture (prime learn "
                        "records whatever CAPGUARD_PRIME_READONLY says)",
                        *prime ? prime : "in use", r.images, cg_plural(r.images),
                        r.names[0] ? r.names : "not named: a compressed fatbin",
                        r.kernels > r.shown ? ", ..." : "", arch, r.images == 1 ? "it" : "them");
  command(x, NULL, NULL, capguard_command(c, c->latest, "capguard prime learn"));
  char word[4200] = "";
  size_t used = 0;
  if (*prime)
    cgr_shell_word(prime, word, sizeof word, &used);
  command(x, "; ", "then check the file here", xprintf("%s doctor%s%s", cgr_self_word(),
                                                         *prime ? " --prime " : "", word));
}

static bool not_recorded_holds(const ctx *c) { return c->a->n_broken || c->a->offending_loads; }
static void not_recorded_say(const ctx *c, cgf_finding *x) {
  char opts[256];
  x->sentence = xprintf("nothing was recorded for the next run%s: see the details below, and check "
                        "the priming file",
                        options_too(c, opts, sizeof opts));
  const char *prime = cgr_run_prime_path(c->log, c->latest);
  char word[4200] = "";
  size_t used = 0;
  if (*prime)
    cgr_shell_word(prime, word, sizeof word, &used);
  command(x, NULL, NULL, xprintf("%s doctor%s%s", cgr_self_word(), *prime ? " --prime " : "", word));
}

/* Loads made with an option capguard cannot reproduce (its value is the
 * program's memory, such as a table of symbol addresses, or unknown to
 * capguard): capguard never serves such a load (a preloaded copy could
 * differ from what the call makes), so it never records one, and "check
 * the priming file" would find nothing wrong with it. Every other option is
 * recorded and served (the CUDA runtime's lazy loads among them).
 * options_only: every load during capture not served had one. */
static bool options_only_holds(const ctx *c) { return c->opt_loads && c->opt_loads == c->a->offending_loads; }
static bool options_holds(const ctx *c) { return c->opt_loads != 0; }
static void options_say_with(const ctx *c, cgf_finding *x, bool eager_command) {
  size_t n = c->opt_loads, all = c->a->offending_loads;
  const char *them = n == 1 ? "it" : "them";
  char some[64] = "";
  if (n < all)
    snprintf(some, sizeof some, " of the %zu", all);
  x->sentence = xprintf("%s%zu%s load%s during capture passed %s%s, which capguard cannot reproduce "
                        "and so never serves nor records%s: make %s before capture%s",
                        n < all ? "" : "the ", n, some, n < all || n != 1 ? "s" : "",
                        c->opt_name ? c->opt_name : "an option", c->opt_lazy ? " (the CUDA runtime's lazy loading)" : "",
                        n < all ? "" : " (nothing was recorded for the next run)", them,
                        c->opt_lazy ? " (run those ops once before capture)" : " begins");
  if (!c->opt_lazy || !eager_command)
    return;
  char cmd[1024];
  cgr_rerun_command_with(c->log, c->opt_run, NULL, cmd, sizeof cmd);
  command(x, "; ", "or have the runtime load its modules at start-up",
          xprintf("CUDA_MODULE_LOADING=EAGER %s", cmd));
}
static void options_say(const ctx *c, cgf_finding *x) { options_say_with(c, x, true); }
/* the report: runtime-lazy-load gives the command with CUDA_MODULE_LOADING=EAGER */
static void options_report_say(const ctx *c, cgf_finding *x) { options_say_with(c, x, !c->lazy_loads); }
/* a sentence's end for the rows that say what was, or was not, recorded */
static const char *options_too(const ctx *c, char *buf, size_t cap) {
  buf[0] = '\0';
  if (c->opt_loads)
    snprintf(buf, cap,
             "; %zu load%s with %s %s not recorded (capguard cannot reproduce that option, so "
             "never serves such a load: make %s before capture%s)",
             c->opt_loads, cg_plural(c->opt_loads), c->opt_name ? c->opt_name : "an option",
             was_were(c->opt_loads), c->opt_loads == 1 ? "it" : "them",
             c->opt_lazy ? ", CUDA_MODULE_LOADING=EAGER for the runtime's" : "");
  return buf;
}

/* Processes that used CUDA and wrote no exit record: what they did last is
 * not in the log, so no row may say that nothing broke. */
static bool ended_early_holds(const ctx *c) { return c->a->ended_early != 0; }
static void ended_early_list_say(const ctx *c, cgf_finding *x) {
  char who[1024];
  size_t n = c->a->ended_early;
  cgr_ended_list(c->log, 4, c->f->signal_pid, c->f->signal, who, sizeof who);
  x->sentence = xprintf("%zu process%s ended without an exit record (killed, crashed, left "
                        "through _exit, or still running): %s; what %s did after %s last line is "
                        "not in the log, so the counts are lower bounds",
                        n, cg_plural_es(n), who, n == 1 ? "it" : "each", n == 1 ? "its" : "its");
  x->emphasis = strcspn(x->sentence, "(") - 1;
}
/* The signal the first process that ended early died of (the log's "ended"
 * record, else run's wait status); 0 when none is known. */
static int ended_signal(const ctx *c) {
  for (size_t p = 0; p < c->log->n_procs; p++) {
    const cgl_process *pr = &c->log->procs[p];
    if (!cgr_ended_early(pr))
      continue;
    if (cgl_process_rare(pr)->signal)
      return cgl_process_rare(pr)->signal;
    if (c->f->signal && pr->pid == c->f->signal_pid)
      return c->f->signal;
  }
  return 0;
}

/* What ended it, said as what it was, with its own next step. */
static const char *ended_cause(int sig, char *buf, size_t cap) {
  char words[48];
  cgr_signal_words(sig, words, sizeof words);
  switch (sig) {
  case 0:
    return "a process ended without an exit record, so capguard cannot say what happened after its "
           "last line: find why it ended (its own output; dmesg for the OOM killer), then run it again";
  case SIGINT:
    snprintf(buf, cap, "the command was interrupted by %s, Ctrl-C, before it ended, so what it did "
                       "after its last line, a capture then open included, is not in the log; "
                       "nothing went wrong that capguard saw: run it again and let it finish", words);
    break;
  case SIGTERM:
    snprintf(buf, cap, "the command was asked to stop by %s, from a supervisor, a scheduler's time "
                       "limit, docker stop or kubectl delete, before it ended; if that was not you, find "
                       "who sent it (the orchestrator's events and limits), then run it again", words);
    break;
  case SIGKILL:
    snprintf(buf, cap, "the command was killed by %s, which no process can catch: the kernel's OOM "
                       "killer (dmesg | grep -i 'killed process' names it) or a watchdog's kill "
                       "-9; give it the memory or the time it needs, then run it again", words);
    break;
  case SIGSEGV: case SIGBUS: case SIGABRT: case SIGILL: case SIGFPE:
    snprintf(buf, cap, "the command crashed (%s): its own output and a core dump (coredumpctl, "
                       "or ulimit -c unlimited) say where; fix that, then run it again", words);
    break;
  default:
    snprintf(buf, cap, "the command was killed by %s before it ended: find who sent it, then run it "
                       "again", words);
  }
  return buf;
}

static void ended_early_say(const ctx *c, cgf_finding *x) {
  char cause[512];
  x->sentence = xprintf("%s", ended_cause(ended_signal(c), cause, sizeof cause));
  char cmd[1024];
  cgr_rerun_command(c->log, c->latest, CG_RUN_MODE_COUNT, cmd, sizeof cmd);
  command(x, NULL, NULL, xprintf("%s", cmd));
}
/* run's next: a log cut short (a full disk, a size limit) explains the
 * missing exit records itself: log-incomplete says so, and what to free */
static bool ended_early_next_holds(const ctx *c) { return ended_early_holds(c) && !incomplete_holds(c); }
/* a known signal is the cause before "nothing was recorded": the process
 * died before it could record */
static bool ended_by_signal_holds(const ctx *c) { return ended_early_next_holds(c) && ended_signal(c) != 0; }

static void incomplete_say(const ctx *c, cgf_finding *x) {
  (void)c;
  x->sentence = xprintf("the log is incomplete, so capguard cannot say that nothing broke: free "
                        "space (or pass --log elsewhere) and run it again");
}

static bool primed_holds(const ctx *c) { return c->a->verdicts[CG_VERDICT_SERVED] != 0; }
static void primed_say(const ctx *c, cgf_finding *x) {
  const char *prime = cgr_run_prime_path(c->log, c->latest);
  x->sentence = xprintf("priming worked: every load during capture was served from %s",
                        *prime ? prime : "the priming file");
}

static bool handled_holds(const ctx *c) { return c->a->calls != 0; }
static void handled_say(const ctx *c, cgf_finding *x) {
  (void)c;
  /* calls were made and none broke a capture (guard mode answered them) */
  x->sentence = xprintf("no capture broke: the calls during capture (counted above) were "
                        "handled; nothing to do (capguard report gives each with where it was "
                        "made)");
}

/* -- the report's advice (and run's faster: and note:) -- */

static bool warm_holds(const ctx *c) {
  return (c->broken_loads || c->a->verdicts[CG_VERDICT_RESCUED]) &&
         (c->to_warm || c->unnamed_images);
}
static void warm_say(const ctx *c, cgf_finding *x) {
  const cgr_analysis *a = c->a;
  /* Name them when their distinct names are few: the advice is then
   * complete on its own. Distinct as a person reads them: a template's
   * instances (torch's cat compiles 18 of 4 templates) are one name, so a
   * runtime fatbin's instances do not push the one Triton kernel out. */
  enum { NAMED_MAX = 6 };
  char names[1024] = "", shown[NAMED_MAX][CG_KERNEL_DISPLAY_MAX], disp[CG_KERNEL_DISPLAY_MAX];
  size_t n_shown = 0, used = 0;
  bool too_many = false;
  for (size_t k = 0; k < a->n_kernels && !too_many; k++) {
    if (!a->kernels[k].broke)
      continue;
    cg_kernel_display(a->kernels[k].name, disp, sizeof disp);
    bool seen = false;
    for (size_t i = 0; i < n_shown && !seen; i++)
      seen = !strcmp(shown[i], disp);
    if (seen)
      continue;
    if (n_shown == NAMED_MAX)
      too_many = true;
    else
      memcpy(shown[n_shown++], disp, sizeof disp);
  }
  for (size_t i = 0; i < n_shown && !too_many; i++) {
    int n = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : " (", shown[i]);
    if (n < 0 || (size_t)n >= sizeof names - used - 1) { /* no room: no list, the count alone */
      used = 0;
      break;
    }
    used += (size_t)n;
  }
  names[used] = '\0';
  if (used)
    names[used++] = ')', names[used] = '\0';
  bool guard = true;
  for (size_t p = 0; p < c->log->n_procs; p++)
    if (c->log->procs[p].run_index == c->broke_run)
      guard &= c->log->procs[p].mode == CG_RUN_GUARD || c->log->procs[p].mode == CG_RUN_MODE_COUNT;
  /* what to warm: named kernels, and images whose kernels have no names here
   * (a compressed fatbin: the runtime's own, loaded at a first launch) */
  char count[1400];
  size_t things = c->to_warm + c->unnamed_images;
  int n = c->to_warm == 1 ? snprintf(count, sizeof count, "this kernel%s", names)
          : c->to_warm   ? snprintf(count, sizeof count, "these %zu kernels%s", c->to_warm, names)
                         : 0;
  if (c->unnamed_images && n >= 0 && (size_t)n < sizeof count)
    snprintf(count + n, sizeof count - (size_t)n,
             "%s %zu image%s whose kernels capguard cannot name (a compressed fatbin%s)",
             c->to_warm ? " and the kernels of" : "the kernels of", c->unnamed_images,
             cg_plural(c->unnamed_images),
             c->lazy_loads ? ", such as the CUDA runtime loads at a kernel's first launch: run "
                             "the op that launches it" : "");
  if (options_only_holds(c)) { /* never recorded: priming is no way out (loads-with-options says why) */
    x->sentence = xprintf("warm %s up before capture (run %s once outside capture): capguard cannot "
                          "prime %s, loaded with %s, which it cannot reproduce",
                          count, things == 1 ? "it" : "each", things == 1 ? "it" : "them",
                          c->opt_name ? c->opt_name : "an option");
    return;
  }
  /* Some loads had options, some not (all of them: said above): priming
   * serves the others only, and the ones with options break again. */
  char all_but[200] = "";
  if (c->opt_loads)
    snprintf(all_but, sizeof all_but,
             ", all but the %zu load%s made with %s, which it cannot reproduce and never serves "
             "(warm %s up either way)",
             c->opt_loads, cg_plural(c->opt_loads), c->opt_name ? c->opt_name : "an option",
             c->opt_loads == 1 ? "that one" : "those");
  x->sentence = xprintf(
      "warm %s up before capture (run %s once outside capture), or let capguard prime %s%s: %s",
      count, things == 1 ? "it" : "each", things == 1 ? "it" : "them", all_but,
      guard ? "run the same command again under capguard; the images it recorded are loaded "
              "before capture"
            : "run it in guard mode, which records the images and loads them before capture on "
              "the run after");
  char cmd[1024];
  cgr_rerun_command(c->log, c->broke_run, CG_RUN_MODE_COUNT, cmd, sizeof cmd);
  command(x, NULL, NULL, xprintf("%s", cmd));
}

/* The warm-up advice's priming serves loads only: when another call broke a
 * capture too (a refused allocation after the refused load), the run after
 * priming breaks on it again, which the report says next to that advice. */
static bool priming_not_enough_holds(const ctx *c) { return c->again_kept && warm_holds(c); }
static void priming_not_enough_say(const ctx *c, cgf_finding *x) {
  const cgl_event *e = &c->log->evs[c->first_again_kept];
  const char *kind = cgl_word(&cg_event_kinds, e->kind);
  char site[512];
  cgl_event_site(e, site, sizeof site);
  x->sentence = xprintf("priming alone will not do: %zu other call%s broke %s too (first %s, %s, "
                        "pid %lld, at %s), and priming serves only loads, so the run after priming "
                        "breaks on %s again: make %s before the capture begins or after it ends",
                        c->again_kept, cg_plural(c->again_kept),
                        c->a->n_broken > 1 ? "captures" : "the capture", e->call ? e->call : "?",
                        kind ? kind : "?", c->log->procs[e->proc].pid, site[0] ? site : "an unknown site",
                        c->again_kept == 1 ? "it" : "them", c->again_kept == 1 ? "it" : "them");
  if (!c->again_not_alloc) /* --rescue makes a prohibited allocation in relaxed mode */
    command(x, "; ", "or capture in one run, each refused load and allocation made in relaxed mode",
            rerun(c, c->broke_run, "--rescue"));
}

/* How to converge in fewer runs than one per breaking load. */
static void faster_say(const ctx *c, cgf_finding *x) {
  size_t run = c->f->mode == CG_RUN_MODE_COUNT ? c->broke_run : c->latest;
  if (c->most_refused == 1)
    x->sentence = xprintf("each process stopped at its first refused load (a framework such as "
                          "Triton raises there), so each run on a driver that refuses loads during "
                          "capture (before 12.3, or emulated) learns one load: as many runs as "
                          "loads");
  else
    x->sentence = xprintf("each run on a driver that refuses loads during capture (before 12.3, or "
                          "emulated) learns only the loads up to the capture that breaks (here, at "
                          "most %zu in one process)", c->most_refused);
  command(x, "; ", "learn them all in one run on a machine with driver 12.3 or newer and the "
                   "same GPU architecture", capguard_command(c, run, "capguard prime learn"));
  command(x, ", ", "then check the file as this driver would use it",
          capguard_command(c, run, "capguard prime check"));
  command(x, "; ", "or capture in one run here, each refused load made in relaxed mode",
          rerun(c, run, "--rescue"));
}
/* not for loads made with options alone: learning never records them either */
static bool faster_report_holds(const ctx *c) { return c->a->loads_refused && !options_only_holds(c); }
static bool faster_run_holds(const ctx *c) {
  /* a priming file already said to be unusable: the way on is to fix it
   * (next: says so), not commands that name it again; nor when another call
   * than a load broke the capture too: learning every load would not save
   * it, and next: gave the --rescue command already */
  return c->a->loads_refused && c->a->n_broken && c->f->mode == CG_RUN_GUARD && !c->f->prime_unusable &&
         !c->again_kept && !options_only_holds(c);
}

/* Loads the CUDA runtime made lazily, at a kernel's first launch: its own
 * modules (torch's cat, its GEMMs) load mid-capture unless loaded eagerly.
 * capguard records them with the options the runtime passes and serves
 * them on the next run, as any other load: the program need not change.
 * Only a lazy load capguard could not record (an option it cannot
 * reproduce) is advised away. */
static bool runtime_lazy_holds(const ctx *c) { return c->opt_lazy; }
/* run's note: not when next: said it (every load not served was the runtime's, with options) */
static bool runtime_lazy_note_holds(const ctx *c) { return c->opt_lazy && !options_only_holds(c); }

/* Loads of recorded bytes whose options differ from those recorded: not
 * served this run, recorded with their own options for the next. */
static bool options_differ_holds(const ctx *c) { return c->differ_loads != 0; }
static void options_differ_say(const ctx *c, cgf_finding *x) {
  size_t n = c->differ_loads;
  x->sentence = xprintf("%zu load%s during capture asked for other options than the priming file "
                        "recorded for the same bytes (%s), so %s not served; capguard recorded %s "
                        "with %s own options, and serves %s on the next run",
                        n, cg_plural(n), c->differ, n == 1 ? "it was" : "they were", n == 1 ? "it" : "them",
                        n == 1 ? "its" : "their", n == 1 ? "it" : "them");
}
static void runtime_lazy_say(const ctx *c, cgf_finding *x) {
  size_t n = c->lazy_loads;
  x->sentence = xprintf("%zu load%s during capture %s made by the CUDA runtime's lazy loading "
                        "(__cudaGetKernel: the first launch of a kernel compiled into a library, "
                        "torch's own for one): CUDA_MODULE_LOADING=EAGER makes the runtime load its "
                        "modules at start-up, before any capture (or launch those ops once before "
                        "capture)",
                        n, cg_plural(n), was_were(n));
  char cmd[1024];
  cgr_rerun_command_with(c->log, c->lazy_run, NULL, cmd, sizeof cmd);
  command(x, NULL, NULL, xprintf("CUDA_MODULE_LOADING=EAGER %s", cmd));
}

static bool skipped_arch_holds(const ctx *c) { return c->a->skipped_arch != 0; }
static void skipped_arch_say(const ctx *c, cgf_finding *x) {
  const cgr_analysis *a = c->a;
  x->sentence = xprintf("%zu priming record%s not used: built for sm_%lld, this device is "
                        "sm_%lld; learn the priming file on this GPU architecture (capguard prime "
                        "learn)",
                        a->skipped_arch, a->skipped_arch == 1 ? " was" : "s were", a->skipped_sm,
                        a->device_sm);
}

static bool unused_holds(const ctx *c) { return c->a->primed_unused != 0; }
/* Whether a capture was broken before any had ended: the run stopped
 * before it reached the loads its preloaded images were for. */
static bool broke_first(const ctx *c) {
  for (size_t b = 0; b < c->a->n_broken; b++)
    if (c->log->caps[c->a->broken[b].capture].id == 1)
      return true;
  return false;
}
static void unused_say(const ctx *c, cgf_finding *x) {
  size_t n = c->a->primed_unused;
  const char *prime = cgr_run_prime_path(c->log, c->latest);
  bool first = broke_first(c);
  x->sentence = xprintf("a process preloaded %zu image%s from %s that it never used (%s): each costs "
                        "start-up time and device memory; %s",
                        n, cg_plural(n), *prime ? prime : "the priming file",
                        first ? "the run broke at its first capture, before the loads they serve" :
                                "another program's, recorded in the same file, or a path this run did not take",
                        first ? "they are used once the capture that broke is mended" :
                                "give each program its own file (capguard run does when no --prime is given), "
                                "or see what the file holds");
  char word[4200] = "";
  size_t used = 0;
  if (*prime)
    cgr_shell_word(prime, word, sizeof word, &used);
  command(x, NULL, NULL, xprintf("%s prime list%s%s", cgr_self_word(), *prime ? " " : "", word));
}

static bool allowed_holds(const ctx *c) { return c->a->verdicts[CG_VERDICT_ALLOWED] != 0; }
static void allowed_say(const ctx *c, cgf_finding *x) {
  size_t allowed = c->a->verdicts[CG_VERDICT_ALLOWED];
  x->sentence = xprintf("%zu module load%s during capture %s allowed by this driver (12.3 or "
                        "newer); drivers older than 12.3 refuse them and break the capture: prime "
                        "them before deploying there (guard mode records them; prime learn "
                        "does it in one run and says what it learned)",
                        allowed, cg_plural(allowed), was_were(allowed));
  command(x, NULL, NULL, capguard_command(c, c->allowed_run, "capguard prime learn"));
  command(x, ", ", "and see what such a driver does",
          rerun(c, c->allowed_run, "--emulate-driver 12020"));
}

static bool unloads_deferred_holds(const ctx *c) { return c->a->unloads_deferred != 0; }
static void unloads_deferred_say(const ctx *c, cgf_finding *x) {
  size_t n = c->a->unloads_deferred;
  x->sentence = xprintf("%zu module unload%s during capture %s deferred by capguard until the "
                        "capture ended (every driver refuses unloads during capture): nothing to "
                        "do while running under capguard in guard mode; without it, keep kernel "
                        "objects alive across capture",
                        n, cg_plural(n), was_were(n));
}

static bool unloads_holds(const ctx *c) { return c->unloads > c->a->unloads_deferred; }
static void unloads_say(const ctx *c, cgf_finding *x) {
  size_t n = c->unloads - c->a->unloads_deferred;
  x->sentence = xprintf("%zu module unload%s during capture (refused by every driver): keep "
                        "kernel objects alive across capture, or run in guard mode, which defers "
                        "unloads until the capture ends",
                        n, cg_plural(n));
}

static bool other_holds(const ctx *c) { return c->other != 0; }
static void other_say(const ctx *c, cgf_finding *x) {
  const cgr_analysis *a = c->a;
  char phrase[1024];
  cgr_offender_phrase(c->log, a->broken[c->first_other].capture,
                      a->broken[c->first_other].first_event, phrase, sizeof phrase);
  x->sentence = xprintf("%zu capture%s first broken by a call other than a module load, which "
                        "priming cannot serve (%s): make that call before the capture begins, or "
                        "after it ends",
                        c->other, c->other == 1 ? " was" : "s were",
                        strncmp(phrase, "first offender ", 15) ? phrase : phrase + 15);
}

/* Calls the driver answered with an error during capture: nothing broke
 * perhaps, but the program got the error, and a load that failed was not
 * recorded (priming cannot serve it). */
static bool failed_holds(const ctx *c) { return c->failed != 0; }
/* run's next: loads that failed were not recorded; "check the priming
 * file" would find nothing wrong with it */
static bool failed_loads_holds(const ctx *c) { return c->failed_loads != 0; }
static void failed_say(const ctx *c, cgf_finding *x) {
  const cgl_event *e = &c->log->evs[c->first_failed];
  char site[512], result[160], loads[192] = "";
  cgl_event_site(e, site, sizeof site);
  cgr_result_words(cgl_event_num(e, CGL_EV_DRIVER_RESULT) >= 0 ? cgl_event_num(e, CGL_EV_DRIVER_RESULT)
                                                               : cgl_event_num(e, CGL_EV_RESULT),
                   e->meaning, result, sizeof result);
  long long gpu = cgl_process_rare(&c->log->procs[e->proc])->device_sm;
  if (c->failed_loads && e->kind == CG_EV_MODULE_LOAD && cgl_event_num(e, CGL_EV_IMAGE_SM) > 0 && gpu > 0 &&
      gpu != cgl_event_num(e, CGL_EV_IMAGE_SM))
    snprintf(loads, sizeof loads,
             "; a load that fails is not recorded, so priming cannot serve it: "
             "its image is built for sm_%lld, this GPU is sm_%lld",
             cgl_event_num(e, CGL_EV_IMAGE_SM), gpu);
  else if (c->failed_loads)
    snprintf(loads, sizeof loads, "; a load that fails is not recorded, so priming cannot serve it");
  x->sentence = xprintf("%zu call%s during capture failed: the driver returned an error, which "
                        "capguard passed to the program (first %s, CUresult %s, at %s)%s",
                        c->failed, cg_plural(c->failed), e->call ? e->call : "?", result,
                        site[0] ? site : "an unknown site", loads);
}

static bool unwatched_holds(const ctx *c) { return c->unwatched != 0; }
static void unwatched_say(const ctx *c, cgf_finding *x) {
  size_t n = c->unwatched;
  const char *it = n == 1 ? "it" : "them", *each = n == 1 ? "it" : "each";
  x->sentence = xprintf("%zu capture%s " CGR_UNWATCHED ": capguard saw no call break %s; look at "
                        "the code between where %s began (above) and where %s ended",
                        n, n == 1 ? " was" : "s were", it, each, each);
}

static bool not_said_holds(const ctx *c) { return c->not_said != 0; }
static void not_said_say(const ctx *c, cgf_finding *x) {
  size_t n = c->not_said;
  x->sentence = xprintf("%zu capture%s broke and the log does not say which call broke %s (an "
                        "older capguard wrote it, or the process did not exit through capguard): "
                        "run the command again under this capguard to have the first offender "
                        "named",
                        n, cg_plural(n), n == 1 ? "it" : "them");
}

static bool served_holds(const ctx *c) { return c->a->verdicts[CG_VERDICT_SERVED] != 0; }
static void served_say(const ctx *c, cgf_finding *x) {
  size_t n = c->a->verdicts[CG_VERDICT_SERVED];
  x->sentence = xprintf("%zu load%s during capture %s served from the priming file: priming works",
                        n, cg_plural(n), was_were(n));
}

static bool kept_holds(const ctx *c) { return c->a->kept != 0; }
static void kept_say(const ctx *c, cgf_finding *x) {
  const cgr_analysis *a = c->a;
  size_t n = a->kept;
  const char *them = n == 1 ? "it" : "them";
  /* "deferred-free 1, not-ready 2": by verdict, in the table's order */
  char by[256] = "";
  size_t used = 0;
  for (unsigned v = 0; v < CG_VERDICT_COUNT; v++) {
    int k = a->kept_by[v] ? snprintf(by + used, sizeof by - used, "%s%s %zu", used ? ", " : "",
                                     cg_verdict_name(v), a->kept_by[v])
                          : 0;
    if (k > 0 && (size_t)k < sizeof by - used)
      used += (size_t)k;
  }
  x->sentence = xprintf("%zu call%s during capture (%s) would break the capture without capguard; "
                        "guard mode answered %s so that the capture survived: nothing to do under "
                        "capguard; without it, make %s outside capture",
                        n, cg_plural(n), by, them, them);
}

/* Loads on the request path (docs/request-path.md): after serving began, a
 * request paid each one's latency. Said with the way that removes each:
 * warm-up, the priming file (guard mode), or, for the CUDA runtime's own,
 * CUDA_MODULE_LOADING=EAGER. */
static bool request_holds(const ctx *c) {
  for (size_t i = 0; i < c->log->n_reqs; i++)
    if (cgr_request_counts(c->log, i))
      return true;
  return false;
}
static void request_say(const ctx *c, cgf_finding *x) {
  cgr_request_totals t;
  cgr_request_totals_of(c->log, &t);
  const cgl_request *q = &c->log->reqs[t.first];
  char total[32], first[32], names[512] = "", disp[CG_KERNEL_DISPLAY_MAX];
  cgr_duration(t.load_ns, total, sizeof total);
  cgr_duration(t.first_after_ns, first, sizeof first);
  size_t used = 0;
  for (size_t k = 0; k < q->kernels->n && k < 3 && used < sizeof names; k++)
    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", k ? ", " : "",
                             cg_kernel_display(q->kernels->v[k], disp, sizeof disp));
  bool guard = c->log->procs[q->proc].mode == CG_RUN_GUARD;
  size_t unserved = t.loads - t.served;
  char served[160] = "";
  if (t.served)
    snprintf(served, sizeof served, "; %zu served from the priming file (the driver's load was made before "
             "serving)", t.served);
  x->sentence = xprintf(
      "%zu load%s on the request path, %s in the load calls, first %s after serving began: kernels %s%s (first "
      "at %s%s%s)%s; warm %s up before serving (launch %s once at start-up)%s%s",
      t.loads, cg_plural(t.loads), total, first, names[0] ? names : "unnamed", q->kernels->n > 3 ? ", ..." : "",
      q->python_top ? q->python_top : q->site, q->framework ? ", by " : "", q->framework ? q->framework : "",
      served, unserved == 1 ? "it" : "them",
      unserved == 1 ? "it" : "each",
      !unserved ? ""
      : guard   ? (unserved == 1 ? ", or run again: in guard mode capguard recorded it, and the next run loads it "
                                   "before its first capture and serves it here"
                                 : ", or run again: in guard mode capguard recorded them, and the next run loads "
                                   "them before its first capture and serves them here")
                : (unserved == 1 ? ", or run in guard mode, which records it and serves it on the run after"
                                 : ", or run in guard mode, which records them and serves them on the run after"),
      t.lazy ? "; the CUDA runtime's own lazy loads: CUDA_MODULE_LOADING=EAGER loads every module of the "
               "runtime at start-up (seconds more, each process)" : "");
  if (t.lazy) {
    char cmd[1024];
    cgr_rerun_command_with(c->log, c->log->procs[q->proc].run_index, NULL, cmd, sizeof cmd);
    command(x, NULL, NULL, xprintf("CUDA_MODULE_LOADING=EAGER %s", cmd));
  }
}

/* The stale-pointer check (CAPGUARD_STALE=1) named memory a live graph exec
 * reads, freed: what to do when its free was seen, and when only a replay of
 * memory that changed since the capture was. Each group of the report's
 * section asks the rows below; the finding says the first. */
static const char STALE_FREED[] = "keep the buffer alive as long as the graph exec, re-capture after a resize, or "
                                  "destroy the exec (cuGraphExecDestroy) before the free";
static const char STALE_REPLACED[] = "re-capture the graph after the buffer is replaced (a resize, a new tensor), or "
                                     "keep the buffer alive as long as the graph exec";
static bool stale_freed_holds(const ctx *c) { return c->f->stale_freed; }
static void stale_freed_say(const ctx *c, cgf_finding *x) {
  (void)c;
  x->sentence = xprintf("%s", STALE_FREED);
}
static bool stale_replaced_holds(const ctx *c) { return !c->f->stale_freed; }
static void stale_replaced_say(const ctx *c, cgf_finding *x) {
  (void)c;
  x->sentence = xprintf("%s", STALE_REPLACED);
}
static bool stale_holds(const ctx *c) { return c->log->n_stale > 0; }
static void stale_say(const ctx *c, cgf_finding *x) {
  size_t n = c->a->n_stale_reads;
  x->sentence = xprintf("%zu stale read%s: a live graph exec reads memory freed or unmapped under it (each "
                        "replay reads or writes memory that is no longer its own, silently): %s (capguard "
                        "report: \"Memory a live graph reads, freed\")",
                        n, cg_plural(n), STALE_FREED);
}

/* The hang watch (CAPGUARD_HANG_S) said a launch not finished, a call or a
 * capture that waited, or a teardown held by live graphs; or a process
 * exited with graph execs holding collectives alive. */
static size_t hangs_said(const ctx *c) {
  size_t n = 0;
  for (size_t i = 0; i < c->log->n_hangs; i++)
    n += c->log->hangs[i].kind != CG_EV_LAUNCH_COUNT;
  for (size_t p = 0; p < c->log->n_procs; p++)
    n += cgl_process_rare(&c->log->procs[p])->collective_execs > 0;
  return n;
}
static bool hangs_holds(const ctx *c) { return hangs_said(c) > 0; }
static void hangs_say(const ctx *c, cgf_finding *x) {
  size_t n = hangs_said(c);
  x->sentence = xprintf("%zu hang%s located by the hang watch (a graph launch not finished, a wait, a teardown held "
                        "by graphs that hold collectives): capguard report's \"Hangs (CAPGUARD_HANG_S)\" names the "
                        "graph, the rank behind or busy, and the fix; give it every rank's log",
                        n, cg_plural(n));
}

/* nothing to do only when no call at all was made during capture, of any kind */
static bool all_clear_holds(const ctx *c) {
  return !c->a->n_broken && !c->a->calls && !c->a->ended_early && !c->log->cut_files && !c->log->n_stale &&
         !hangs_said(c);
}
static void all_clear_say(const ctx *c, cgf_finding *x) {
  (void)c;
  x->sentence = xprintf("no forbidden calls during capture: nothing to do");
}

/* -- prime learn's and prime check's verdicts -- */

static bool learn_incomplete_holds(const ctx *c) {
  return c->f->prime_run->old_driver && c->f->prime_run->refused;
}
static void learn_incomplete_say(const ctx *c, cgf_finding *x) {
  const cgf_prime_run *r = c->f->prime_run;
  char arch[32] = "";
  if (r->device_sm || r->learned_arch)
    snprintf(arch, sizeof arch, " (sm_%lld)", r->device_sm ? r->device_sm : (long long)r->learned_arch);
  x->sentence = xprintf("incomplete: this driver (%lld.%lld) refuses module loads during capture, "
                        "so this run learned only the loads up to the capture that broke. Learn "
                        "on a machine with driver 12.3 or newer and the same GPU architecture%s, "
                        "then copy the file here",
                        r->old_driver / 1000, (r->old_driver % 1000) / 10, arch);
  command(x, "; ", "or run with --rescue", prime_command(r, "capguard run --rescue"));
  x->fails = true;
}

/* Loads the driver failed during the learning run: not in the file, so the
 * file is short of what the program loads (an image for another GPU). */
static bool learn_loads_failed_holds(const ctx *c) { return c->f->prime_run->failed != 0; }
static void learn_loads_failed_say(const ctx *c, cgf_finding *x) {
  const cgf_prime_run *r = c->f->prime_run;
  x->sentence = xprintf("incomplete: %zu load%s during capture failed (first %s), and a load that "
                        "fails is not recorded: find why the driver failed %s, then learn again",
                        r->failed, cg_plural(r->failed), r->first_failed ? r->first_failed : "?",
                        r->failed == 1 ? "it" : "them");
  x->fails = true;
}

static bool command_failed_holds(const ctx *c) { return c->f->prime_run->status != 0; }
static void learn_failed_say(const ctx *c, cgf_finding *x) {
  x->sentence = xprintf("the command exited with status %d; what it loaded before that was "
                        "recorded", c->f->prime_run->status);
}

static bool learned_holds(const ctx *c) { (void)c; return true; }
static void learned_say(const ctx *c, cgf_finding *x) {
  x->sentence = xprintf("next");
  command(x, ": ", "check it as a driver before 12.3 would use it",
          prime_command(c->f->prime_run, "capguard prime check"));
}

static bool check_nothing_holds(const ctx *c) { return !c->f->prime_run->procs; }
static void check_nothing_say(const ctx *c, cgf_finding *x) {
  (void)c;
  x->sentence = xprintf("FAIL: no process of the command used CUDA under capguard (none that "
                        "does, or a static or setuid program, or LD_PRELOAD cleared?); nothing "
                        "was checked: see capguard doctor");
  x->fails = true;
}

static bool check_missing_holds(const ctx *c) {
  return c->f->prime_run->loads > c->f->prime_run->served;
}
/* Each load check saw reach the driver, by its true cause: only the images
 * the file lacks are learned again. A load made with an option capguard
 * cannot reproduce is never recorded, and asking other options than the
 * file holds is the program's choice: sending the user back to the learn
 * that just made the file would loop. */
static void check_missing_say(const ctx *c, cgf_finding *x) {
  const cgf_prime_run *r = c->f->prime_run;
  size_t missing = r->loads - r->served;
  size_t lacks = missing - (r->foreign + r->differ < missing ? r->foreign + r->differ : missing);
  char why[1024] = "";
  size_t at = 0;
  if (r->foreign)
    at += (size_t)snprintf(why + at, sizeof why - at,
                           "; %zu passed %s, which capguard cannot reproduce and so never records (learning "
                           "again would not help: make %s before capture)",
                           r->foreign, r->foreign_name ? r->foreign_name : "an option", r->foreign == 1 ? "it" : "them");
  if (r->differ && at < sizeof why)
    at += (size_t)snprintf(why + at, sizeof why - at,
                           "; %zu asked other options than %s recorded for the same bytes (%s): learn with "
                           "the options the deployed program passes",
                           r->differ, r->prime, r->differ_how ? r->differ_how : "?");
  if (lacks == missing)
    snprintf(why, sizeof why, "; %s lacks %s", r->prime, missing == 1 ? "it" : "them");
  else if (lacks && at < sizeof why)
    snprintf(why + at, sizeof why - at, "; %s lacks the image%s of the other %zu", r->prime, lacks == 1 ? "" : "s",
             lacks);
  x->sentence = xprintf("FAIL: %zu load%s during capture reached the driver%s", missing, cg_plural(missing), why);
  x->lists_loads = true;
  if (lacks)
    command(x, NULL, "learn the images the file lacks in one run where the driver allows loads during capture "
                     "(12.3 or newer, same GPU architecture) that takes the paths and sizes this run took",
            prime_command(r, "capguard prime learn"));
  x->fails = true;
}

static void check_failed_say(const ctx *c, cgf_finding *x) {
  x->sentence = xprintf("no load reached the driver during capture, but the command exited with "
                        "status %d", c->f->prime_run->status);
  x->fails = true;
}

static void check_ok_say(const ctx *c, cgf_finding *x) {
  const cgf_prime_run *r = c->f->prime_run;
  x->sentence = xprintf("ok: all %zu load%s during capture in %zu process%s served from %s; a "
                        "driver before 12.3 would capture every graph",
                        r->loads, cg_plural(r->loads), r->procs, cg_plural_es(r->procs), r->prime);
}

static const row rows[] = {
    /* run's summary of a log with nothing to analyse */
    {"log-empty-incomplete", CGF_NO_RECORDS, empty_incomplete_holds, empty_incomplete_say},
    {"mode-off", CGF_NO_RECORDS, mode_off_holds, mode_off_say},
    {"shim-silent", CGF_NO_RECORDS, shim_silent_holds, shim_silent_say},
    {"no-cuda", CGF_NO_RECORDS, no_cuda_holds, no_cuda_say},
    /* run's summary: a line each after the broken captures */
    {"escaped", CGF_SAID, escaped_holds, escaped_say},
    {"open-at-exit", CGF_SAID, open_at_exit_holds, open_at_exit_say},
    {"ended-early", CGF_SAID, ended_early_holds, ended_early_list_say},
    {"emulate-newer", CGF_SAID | CGF_REPORT, emulate_newer_holds, emulate_newer_say},
    /* the text report's Escaped captures section */
    {"escapes-note", CGF_ESCAPES, escaped_holds, escapes_note_say},
    /* run's summary: what to do next, the first that holds */
    {"breaks-again", CGF_NEXT, breaks_again_holds, breaks_again_say},
    {"run-again", CGF_NEXT, recorded_holds, recorded_say},
    {"no-load-broke", CGF_NEXT, no_load_broke_holds, no_load_broke_say},
    {"loads-with-options", CGF_NEXT, options_only_holds, options_say},
    {"guard-mode", CGF_NEXT, guard_mode_holds, guard_mode_say},
    {"prime-refused", CGF_NEXT, prime_refused_holds, prime_refused_say},
    {"read-only", CGF_NEXT, readonly_holds, readonly_say},
    {"calls-failed", CGF_NEXT, failed_loads_holds, failed_say},
    {"ended-early", CGF_NEXT, ended_by_signal_holds, ended_early_say},
    /* a log the disk could not hold: before what its missing lines would explain */
    {"log-incomplete", CGF_NEXT, incomplete_holds, incomplete_say},
    {"nothing-recorded", CGF_NEXT, not_recorded_holds, not_recorded_say},
    {"ended-early", CGF_NEXT, ended_early_next_holds, ended_early_say},
    {"ended-early", CGF_REPORT, ended_early_holds, ended_early_say},
    {"log-incomplete", CGF_NEXT, incomplete_holds, incomplete_say},
    {"priming-worked", CGF_NEXT, primed_holds, primed_say},
    {"handled", CGF_NEXT, handled_holds, handled_say},
    /* the report's advice, every one that holds */
    {"warm-up", CGF_REPORT, warm_holds, warm_say},
    {"priming-not-enough", CGF_REPORT, priming_not_enough_holds, priming_not_enough_say},
    {"faster", CGF_REPORT, faster_report_holds, faster_say},
    {"faster", CGF_FASTER, faster_run_holds, faster_say},
    {"loads-with-options", CGF_REPORT, options_holds, options_report_say},
    {"runtime-lazy-load", CGF_REPORT, runtime_lazy_holds, runtime_lazy_say},
    {"runtime-lazy-load", CGF_NOTE, runtime_lazy_note_holds, runtime_lazy_say},
    {"options-differ", CGF_REPORT | CGF_NOTE, options_differ_holds, options_differ_say},
    {"skipped-arch", CGF_REPORT | CGF_NOTE, skipped_arch_holds, skipped_arch_say},
    {"preloaded-unused", CGF_REPORT | CGF_NOTE, unused_holds, unused_say},
    {"allowed-loads", CGF_REPORT, allowed_holds, allowed_say},
    {"unloads-deferred", CGF_REPORT, unloads_deferred_holds, unloads_deferred_say},
    {"unloads", CGF_REPORT, unloads_holds, unloads_say},
    {"other-call", CGF_REPORT, other_holds, other_say},
    {"calls-failed", CGF_REPORT, failed_holds, failed_say},
    {"unwatched", CGF_REPORT, unwatched_holds, unwatched_say},
    {"offender-not-said", CGF_REPORT, not_said_holds, not_said_say},
    {"served", CGF_REPORT, served_holds, served_say},
    {"kept-alive", CGF_REPORT, kept_holds, kept_say},
    {"stale", CGF_REPORT | CGF_SAID, stale_holds, stale_say},
    /* each group of the report's stale section: what to do about it */
    {"stale-freed", CGF_STALE_GROUP, stale_freed_holds, stale_freed_say},
    {"stale-replaced", CGF_STALE_GROUP, stale_replaced_holds, stale_replaced_say},
    {"request-path-loads", CGF_REPORT | CGF_SAID, request_holds, request_say},
    {"hangs", CGF_REPORT | CGF_SAID, hangs_holds, hangs_say},
    {"all-clear", CGF_REPORT | CGF_NEXT, all_clear_holds, all_clear_say},
    /* prime learn's verdict */
    {"learn-incomplete", CGF_LEARN, learn_incomplete_holds, learn_incomplete_say},
    {"learn-loads-failed", CGF_LEARN, learn_loads_failed_holds, learn_loads_failed_say},
    {"learn-command-failed", CGF_LEARN, command_failed_holds, learn_failed_say},
    {"learned", CGF_LEARN, learned_holds, learned_say},
    /* prime check's verdict */
    {"check-nothing-checked", CGF_CHECK, check_nothing_holds, check_nothing_say},
    {"check-missing", CGF_CHECK, check_missing_holds, check_missing_say},
    {"check-command-failed", CGF_CHECK, command_failed_holds, check_failed_say},
    {"check-ok", CGF_CHECK, learned_holds, check_ok_say},
};

void cgf_collect(const cgf_facts *f, unsigned audience, bool first_only, cgf_list *out) {
  ctx c;
  derive(f, &c);
  /* the facts the audience's rows look at */
  bool have = audience & (CGF_LEARN | CGF_CHECK) ? f->prime_run != NULL
              : audience & CGF_NO_RECORDS        ? f->log != NULL
              : audience & CGF_STALE_GROUP       ? f->stale_group
                                                 : f->a != NULL;
  if (!have)
    return;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (!(rows[i].audience & audience) || !rows[i].holds(&c))
      continue;
    out->v = xrealloc(out->v, (out->n + 1) * sizeof *out->v);
    cgf_finding *x = &out->v[out->n++];
    memset(x, 0, sizeof *x);
    x->key = rows[i].key;
    rows[i].say(&c, x);
    if (first_only)
      return;
  }
}

const cgf_finding *cgf_first(const cgf_facts *f, unsigned audience, cgf_list *list) {
  memset(list, 0, sizeof *list);
  cgf_collect(f, audience, true, list);
  return list->n ? &list->v[0] : NULL;
}

char *cgf_line(const cgf_finding *x) {
  char *s = xprintf("%s", x->sentence);
  for (size_t i = 0; i < x->n_commands; i++) {
    const cgf_command *k = &x->commands[i];
    char *t = k->lead ? xprintf("%s%s%s: %s", s, k->sep ? k->sep : ": ", k->lead, k->text)
                      : xprintf("%s: %s", s, k->text);
    free(s);
    s = t;
    if (k->note) {
      t = xprintf("%s (%s)", s, k->note);
      free(s);
      s = t;
    }
  }
  return s;
}

void cgf_print(FILE *out, const cgf_finding *x, const char *first, const char *indent) {
  fprintf(out, "%s%s%s\n", first, x->sentence, x->n_commands ? ":" : "");
  for (size_t i = 0; i < x->n_commands; i++) {
    const cgf_command *k = &x->commands[i];
    if (k->lead)
      fprintf(out, "%s%s:\n", indent, k->lead);
    /* the command alone on its line: copied whole, it runs */
    fprintf(out, "%s  %s\n", indent, k->text);
    if (k->note)
      fprintf(out, "%s(%s)\n", indent, k->note);
  }
}

void cgf_list_free(cgf_list *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->v[i].sentence);
    for (size_t k = 0; k < l->v[i].n_commands; k++)
      free(l->v[i].commands[k].text);
  }
  free(l->v);
  l->v = NULL;
  l->n = 0;
}
