#include "report_analysis.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fputs("capguard: out of memory analysing the log\n", stderr);
    exit(2);
  }
  return q;
}

static bool is(const char *s, const char *want) { return s && want && !strcmp(s, want); }

bool cgr_offending(const cgl_event *e) { return !is(e->verdict, "served"); }

static void advise(cgr_analysis *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void advise(cgr_analysis *a, const char *fmt, ...) {
  if (a->n_advice >= sizeof a->advice / sizeof a->advice[0])
    return;
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) >= 0)
    a->advice[a->n_advice++] = s;
  va_end(ap);
}

/* Earlier time first; the order read breaks ties (lines of one process are in order). */
static bool before(const cgl_event *x, const cgl_event *y) {
  if (x->time_ns != y->time_ns)
    return x->time_ns < y->time_ns;
  return x->seq < y->seq;
}

static const cgl_log *sort_log;
static int cmp_broken(const void *pa, const void *pb) {
  const cgr_broken *x = pa, *y = pb;
  const cgl_capture *cx = &sort_log->caps[x->capture], *cy = &sort_log->caps[y->capture];
  if (cx->begin_ns != cy->begin_ns)
    return cx->begin_ns < cy->begin_ns ? -1 : 1;
  return x->capture < y->capture ? -1 : x->capture > y->capture;
}
static int cmp_kernel(const void *pa, const void *pb) {
  const cgr_kernel *x = pa, *y = pb;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return strcmp(x->name, y->name);
}
static int cmp_site(const void *pa, const void *pb) {
  const cgr_site *x = pa, *y = pb;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return x->first_event < y->first_event ? -1 : x->first_event > y->first_event;
}

static void find_broken(const cgl_log *log, cgr_analysis *a) {
  a->broken = xrealloc(NULL, log->n_caps * sizeof *a->broken);
  for (size_t c = 0; c < log->n_caps; c++) {
    if (!cgl_capture_broken(log, c))
      continue;
    long first = -1;
    for (size_t i = 0; i < log->n_evs; i++) {
      const cgl_event *e = &log->evs[i];
      if (e->capture == c && cgl_verdict_breaks(e->verdict) &&
          (first < 0 || before(e, &log->evs[first])))
        first = (long)i;
    }
    a->broken[a->n_broken++] = (cgr_broken){c, first};
  }
  sort_log = log;
  if (a->n_broken)
    qsort(a->broken, a->n_broken, sizeof *a->broken, cmp_broken);
}

static void count_kernel(cgr_analysis *a, const char *name, size_t ev, bool broke) {
  for (size_t k = 0; k < a->n_kernels; k++)
    if (!strcmp(a->kernels[k].name, name)) {
      a->kernels[k].count++;
      a->kernels[k].broke |= broke;
      return;
    }
  a->kernels = xrealloc(a->kernels, (a->n_kernels + 1) * sizeof *a->kernels);
  a->kernels[a->n_kernels++] = (cgr_kernel){name, 1, ev, broke};
}

static void count_site(cgr_analysis *a, const cgl_event *e, size_t ev) {
  char site[512];
  cgl_event_site(e, site, sizeof site);
  cgr_site *s = NULL;
  for (size_t k = 0; k < a->n_sites && !s; k++)
    if (!strcmp(a->sites[k].site, site))
      s = &a->sites[k];
  if (!s) {
    a->sites = xrealloc(a->sites, (a->n_sites + 1) * sizeof *a->sites);
    s = &a->sites[a->n_sites++];
    memset(s, 0, sizeof *s);
    memcpy(s->site, site, sizeof site);
    s->first_event = ev;
  }
  s->count++;
  bool have = false;
  for (size_t k = 0; k < s->n_calls; k++)
    have |= is(s->calls[k], e->call);
  if (!have && e->call && s->n_calls < sizeof s->calls / sizeof s->calls[0])
    s->calls[s->n_calls++] = e->call;
  size_t i;
  json_t *n;
  json_array_foreach(e->kernels, i, n) {
    if (!json_is_string(n))
      continue;
    bool dup = false;
    for (size_t k = 0; k < s->n_kernels && !dup; k++)
      dup = !strcmp(s->kernels[k], json_string_value(n));
    if (!dup) {
      s->kernels = xrealloc(s->kernels, (s->n_kernels + 1) * sizeof *s->kernels);
      s->kernels[s->n_kernels++] = json_string_value(n);
    }
  }
}

static void tally(const cgl_log *log, cgr_analysis *a) {
  for (size_t i = 0; i < log->n_evs; i++) {
    const cgl_event *e = &log->evs[i];
    const char *v = e->verdict;
    a->refused += is(v, "refused");
    a->emulated += is(v, "emulated");
    a->allowed += is(v, "allowed");
    a->served += is(v, "served");
    a->rescued += is(v, "rescued");
    a->deferred += is(v, "deferred");
    a->failed += is(v, "failed");
    if (!cgr_offending(e))
      continue;
    if (is(e->event, "module-load") && (is(v, "refused") || is(v, "emulated")))
      a->loads_refused++;
    if (is(e->event, "module-load"))
      a->loads++;
    else if (is(e->event, "module-unload")) {
      a->unloads++;
      a->unloads_deferred += is(v, "deferred");
    }
    else
      a->other_events++;
    size_t k;
    json_t *n;
    json_array_foreach(e->kernels, k, n) {
      if (json_is_string(n))
        count_kernel(a, json_string_value(n), i,
                     cgl_verdict_breaks(e->verdict) || is(e->verdict, "rescued"));
    }
    count_site(a, e, i);
  }
  if (a->n_kernels) /* qsort of NULL, even of 0 elements, is undefined */
    qsort(a->kernels, a->n_kernels, sizeof *a->kernels, cmp_kernel);
  if (a->n_sites)
    qsort(a->sites, a->n_sites, sizeof *a->sites, cmp_site);
  /* Processes that exited cleanly say how many captures they began; others count what was seen. */
  for (size_t p = 0; p < log->n_procs; p++) {
    const cgl_process *pr = &log->procs[p];
    size_t seen = 0;
    for (size_t c = 0; c < log->n_caps; c++)
      seen += log->caps[c].proc == p;
    a->captures += pr->has_summary && (size_t)pr->captures > seen ? (size_t)pr->captures : seen;
    a->recorded += pr->has_summary && pr->recorded > 0 ? (size_t)pr->recorded : 0;
    a->primed_loaded += pr->has_summary && pr->primed_loaded > 0 ? (size_t)pr->primed_loaded : 0;
    /* Every process reads the same file: the most any skipped, not a sum. */
    if (pr->has_summary && (size_t)pr->primed_skipped_arch > a->skipped_arch) {
      a->skipped_arch = (size_t)pr->primed_skipped_arch;
      a->skipped_sm = pr->skipped_sm;
      a->device_sm = pr->device_sm;
    }
  }
}

const char cgr_faster_advice[] =
    "each run on a driver that refuses loads during capture (before 12.3, or emulated) learns "
    "only the loads up to the capture that breaks; to learn them all in one run, use capguard "
    "prime learn -- CMD on a machine with driver 12.3 or newer and the same GPU architecture, "
    "then capguard prime check -- CMD; or run with --rescue";

static void give_advice(cgr_analysis *a) {
  size_t broken_loads = 0, silent = 0;
  for (size_t b = 0; b < a->n_broken; b++) {
    long f = a->broken[b].first_event;
    if (f < 0)
      silent++;
    else if (is(a->log->evs[f].event, "module-load"))
      broken_loads++;
  }
  size_t to_warm = 0;
  for (size_t k = 0; k < a->n_kernels; k++)
    to_warm += a->kernels[k].broke;
  if (broken_loads || a->rescued) {
    /* Name them when there are few: the advice is then complete on its own. */
    char names[256] = "";
    size_t used = 0;
    for (size_t k = 0; k < a->n_kernels && to_warm <= 4; k++) {
      if (!a->kernels[k].broke)
        continue;
      int n = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : " (",
                       a->kernels[k].name);
      if (n < 0 || (size_t)n >= sizeof names - used - 1) {
        names[0] = '\0';
        break;
      }
      used += (size_t)n;
    }
    if (used)
      names[used++] = ')', names[used] = '\0';
    advise(a,
           "warm these %zu kernel%s%s up before capture (run each once outside capture), or let "
           "capguard prime them: run the same command again under capguard in guard mode "
           "(capguard run --mode guard -- CMD); the images it recorded are loaded before capture "
           "on the next run",
           to_warm, to_warm == 1 ? "" : "s", names);
  }
  if (a->loads_refused)
    advise(a, "%s", cgr_faster_advice);
  if (a->skipped_arch)
    advise(a,
           "%zu priming record%s not used: built for sm_%lld, this device is sm_%lld; learn the "
           "priming file on this GPU architecture (capguard prime learn)",
           a->skipped_arch, a->skipped_arch == 1 ? " was" : "s were", a->skipped_sm, a->device_sm);
  if (a->allowed)
    advise(a,
           "%zu module load%s during capture %s allowed by this driver (12.3 or newer); drivers "
           "older than 12.3 refuse them and break the capture: prime them before deploying there "
           "(guard mode), and try it with capguard run --emulate-driver 12020",
           a->allowed, a->allowed == 1 ? "" : "s", a->allowed == 1 ? "was" : "were");
  if (a->unloads_deferred)
    advise(a,
           "%zu module unload%s during capture %s deferred by capguard until the capture ended "
           "(every driver refuses unloads during capture): nothing to do while running under "
           "capguard in guard mode; without it, keep kernel objects alive across capture",
           a->unloads_deferred, a->unloads_deferred == 1 ? "" : "s",
           a->unloads_deferred == 1 ? "was" : "were");
  if (a->unloads > a->unloads_deferred)
    advise(a,
           "%zu module unload%s during capture (refused by every driver): keep kernel objects "
           "alive across capture, or run in guard mode, which defers unloads until the capture "
           "ends",
           a->unloads - a->unloads_deferred, a->unloads - a->unloads_deferred == 1 ? "" : "s");
  if (silent)
    advise(a,
           "%zu capture%s broke without a logged module call: something capguard does not track "
           "(a synchronize, an allocation, a host copy) invalidated %s",
           silent, silent == 1 ? "" : "s", silent == 1 ? "it" : "them");
  if (a->served)
    advise(a, "%zu load%s during capture %s served from the priming file: priming works", a->served,
           a->served == 1 ? "" : "s", a->served == 1 ? "was" : "were");
  if (!a->n_broken && !a->loads && !a->unloads && !a->other_events)
    advise(a, "no forbidden calls during capture: nothing to do");
}

static void cuda_version(long long v, char *buf, size_t cap) {
  if (v > 0)
    snprintf(buf, cap, "CUDA %lld.%lld", v / 1000, (v % 1000) / 10);
  else
    snprintf(buf, cap, "version unknown");
}

void cgr_why(const cgl_event *e, char *buf, size_t cap) {
  char ver[48];
  bool load = is(e->event, "module-load"), unload = is(e->event, "module-unload");
  if (is(e->verdict, "refused") && load) {
    cuda_version(e->driver_version, ver, sizeof ver);
    snprintf(buf, cap, "the driver (%s) refused it: drivers before 12.3 refuse module loads during "
                       "capture", ver);
  } else if (is(e->verdict, "refused") && unload) {
    snprintf(buf, cap, "the driver refused it: every driver refuses module unloads during capture");
  } else if (is(e->verdict, "emulated")) {
    cuda_version(e->emulate_driver, ver, sizeof ver);
    snprintf(buf, cap, "capguard refused it the way %s would (--emulate-driver %lld): drivers "
                       "before 12.3 refuse module loads during capture", ver, e->emulate_driver);
  } else if (is(e->verdict, "refused")) {
    snprintf(buf, cap, "the driver refused it during capture (CUresult %lld)", e->result);
  } else {
    snprintf(buf, cap, "it %s during capture (CUresult %lld)",
             is(e->verdict, "failed") ? "failed" : "was made", e->result);
  }
}

void cgr_kernel_list(const cgl_event *e, size_t max, char *buf, size_t cap) {
  size_t used = 0, shown = 0, i;
  json_t *k;
  buf[0] = '\0';
  json_array_foreach(e->kernels, i, k) {
    if (!json_is_string(k))
      continue;
    if (shown == max) {
      shown++;
      break;
    }
    int n = snprintf(buf + used, cap - used, "%s%s", shown ? ", " : "", json_string_value(k));
    if (n < 0 || (size_t)n >= cap - used) {
      buf[used] = '\0';
      shown = max + 1;
      break;
    }
    used += (size_t)n;
    shown++;
  }
  if ((shown > max || e->kernels_truncated) && used + 6 < cap)
    memcpy(buf + used, ", ...", 6);
}

void cgr_analyse(const cgl_log *log, cgr_analysis *a) {
  memset(a, 0, sizeof *a);
  a->log = log;
  find_broken(log, a);
  tally(log, a);
  give_advice(a);
}

void cgr_free(cgr_analysis *a) {
  free(a->broken);
  free(a->kernels);
  for (size_t i = 0; i < a->n_sites; i++)
    free(a->sites[i].kernels);
  free(a->sites);
  for (size_t i = 0; i < a->n_advice; i++)
    free(a->advice[i]);
  memset(a, 0, sizeof *a);
}
