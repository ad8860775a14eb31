#include <stdlib.h>
#include <string.h>

#include "ended_early.h"
#include "kernel_display.h"
#include "findings.h"
#include "report_hang.h"
#include "report_stale.h"
#include "offender.h"
#include "report_ranks.h"
#include "capture_totals.h"
#include "report_capture_time.h"
#include "report_render.h"
#include "report_runs.h"
#include "plural.h"
#include "process_order.h"

void cgr_process_label(const cgr_report *rep, size_t proc, char *buf, size_t cap) {
  const cgl_process *p = &rep->rows.procs[proc];
  if (rep->rows.n_files > 1) {
    const char *f = rep->rows.files[p->file], *slash = strrchr(f, '/');
    snprintf(buf, cap, "pid %lld (%s)", p->pid, slash ? slash + 1 : f);
  } else {
    snprintf(buf, cap, "pid %lld", p->pid);
  }
}

static const char *or(const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* Every process that used CUDA and wrote no exit record, each with its last line's time. */
static void print_ended(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fprintf(out, "\n%sEnded without an exit record%s (killed, crashed, left through _exit, still "
               "running, or cut from the log: what each did after its last line is not in the log)\n",
          pal.bold, pal.reset);
  for (size_t p = 0; p < rows->n_procs; p++) {
    const cgl_process *pr = &rows->procs[p];
    if (!cgr_ended_early(pr))
      continue;
    char who[256], cmd[96];
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_process_command(pr, cmd, sizeof cmd);
    char last[1024], sig[64] = "";
    cgr_report_ended_last(rep, p, last, sizeof last);
    if (pr->signal) { /* capguard run's "ended" record */
      char words[40];
      cgr_signal_words(pr->signal, words, sizeof words);
      snprintf(sig, sizeof sig, ", killed by %s", words);
    }
    if (!a->procs[p].captures && !a->procs[p].calls) /* not "0 captures": one open when it ended is not logged */
      fprintf(out, "  %s %s%s: no capture and no call during capture logged (a capture still open when it "
                   "ended is not)\n    last logged: %s\n",
              who, cmd[0] ? cmd : "?", sig, last);
    else
      fprintf(out, "  %s %s%s: %zu capture%s, %zu call%s during capture logged\n    last logged: %s\n", who,
              cmd[0] ? cmd : "?", sig, a->procs[p].captures, cg_plural(a->procs[p].captures), a->procs[p].calls,
              cg_plural(a->procs[p].calls), last);
  }
}

/* Module loads and unloads always (what priming is about: "0 loads" is news),
 * the other kinds when they happened (eight zeros would bury the line). */
void cgr_print_event_counts(FILE *out, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  for (unsigned k = 0; k < CG_EV_KIND_COUNT; k++)
    if (k == CG_EV_MODULE_LOAD || k == CG_EV_MODULE_UNLOAD || a->events[k])
      fprintf(out, "%s%s %zu", k ? ", " : "", cg_event_kind_name(k), a->events[k]);
  if (a->events[CG_EV_KIND_COUNT])
    fprintf(out, ", other %zu", a->events[CG_EV_KIND_COUNT]);
}

/* Only the verdicts that happened: zeros are noise to someone reading this the first time. */
void cgr_print_verdict_counts(FILE *out, const cgr_report *rep, const char *lead) {
  const cgr_analysis *a = &rep->a;
  bool any = false;
  for (unsigned v = 0; v <= CG_VERDICT_COUNT; v++)
    if (a->verdicts[v]) {
      fprintf(out, "%s%s %zu", any ? ", " : lead, v < CG_VERDICT_COUNT ? cg_verdict_name(v) : "other",
              a->verdicts[v]);
      any = true;
    }
}

/* One line a run, when the log holds several: which one the report is about. */
static void print_runs(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  bool one = a->shown_run != SIZE_MAX;
  fprintf(out, "\n%sRuns%s (%s)\n", pal.bold, pal.reset,
          one ? "the report below is of the latest; --all for every run" : "all reported below");
  for (size_t r = 0; r < a->n_runs; r++) {
    char line[1024];
    cgr_run_headline(rep, r, pal, line, sizeof line);
    fprintf(out, "  %s %s\n", one && r == a->shown_run ? ">" : " ", line);
  }
}

/* What the capture's end returned, and the calls it counted and did not log again. */
static void print_capture_end(FILE *out, const cgl_capture *c) {
  if (c->has_end_result && c->end_result) {
    char result[160];
    cgr_result_words(c->end_result, NULL, result, sizeof result);
    fprintf(out, "    its end returned %s\n", result);
  }
  if (c->repeats > 0)
    fprintf(out, "    repeats: %lld more call%s like one logged (same call, verdict and site), "
                 "counted, not logged again\n", c->repeats, cg_plural(c->repeats));
}

/* Captures their process never ended and nothing broke (the broken ones are
 * listed above): the process exited, or was killed, mid-capture. */
static void print_open(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_rows *rows = &rep->rows;
  fprintf(out, "\n%sOpen at exit%s (their process exited before ending them: no graph was made)\n", pal.bold,
          pal.reset);
  for (size_t c = 0; c < rows->n_caps; c++) {
    const cgl_capture *cp = &rows->caps[c];
    if (!cg_word_is(&cg_capture_statuses, cp->status, CG_WORD_OPEN) || cgr_report_capture_broken(rep, c))
      continue;
    char who[256];
    cgr_report_process_label(rep, cp->proc, who, sizeof who);
    fprintf(out, "  %s capture %lld (stream %s, %s, open at exit; began %s)\n", who, cp->id, or(cp->stream, "?"),
            or(cgl_word(&cg_capture_modes, cp->mode), "?"), or(cp->began, "where unknown"));
  }
}

static void print_broken(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fprintf(out, "\n%sBroken captures%s\n", pal.bold, pal.reset);
  for (size_t b = 0; b < a->n_broken; b++) {
    const cgl_capture *c = &rows->caps[a->broken[b].capture];
    char who[256];
    cgr_report_process_label(rep, c->proc, who, sizeof who);
    /* one word for it everywhere (the log's status says how: the end failed, or
     * the process exited with it open) */
    bool open_at_exit = cg_word_is(&cg_capture_statuses, c->status, CG_WORD_OPEN);
    fprintf(out, "  %s%s capture %lld%s (stream %s, %s, broken%s; began %s)\n", pal.red, who, c->id,
            pal.reset, or(c->stream, "?"), or(cgl_word(&cg_capture_modes, c->mode), "?"), open_at_exit ? ", open at exit" : "",
            or(c->began, "where unknown"));
    long f = a->broken[b].first_event;
    if (c->by == CGL_BY_CALL || f < 0) {
      /* what the capture record says (or that the log does not say) */
      char phrase[1024];
      cgr_report_offender_phrase(rep, a->broken[b].capture, f, phrase, sizeof phrase);
      fprintf(out, "    %s%s%s\n", pal.bold, phrase, pal.reset);
      /* the native caller too, when the phrase gave the Python line */
      const cgl_offender *o = &c->offender;
      if (c->by == CGL_BY_CALL && *o->where && strcmp(o->where, cgr_offender_at(o)))
        fprintf(out, "    where: %s\n", c->offender.where);
      print_capture_end(out, c);
      /* the logged event of that call, when it is in the log: its kernels and why */
      if (f < 0 || c->by != CGL_BY_CALL || rows->evs[f].call != c->offender.call)
        continue;
    } else {
      const cgl_event *e = &rows->evs[f];
      char site[512];
      char result[160];
      cgl_event_site(e, site, sizeof site);
      cgr_event_result(e, result, sizeof result);
      fprintf(out, "    first broken by %s%s%s (%s, %s, CUresult %s) at %s\n", pal.bold,
              or(e->call, "?"), pal.reset, or(cgl_word(&cg_event_kinds, e->kind), "?"),
              or(cgl_word(&cg_verdicts, e->verdict), "?"), result, site);
      print_capture_end(out, c);
    }
    const cgl_event *e = &rows->evs[f];
    if (e->kernels->n) {
      fputs("    kernels:", out);
      char disp[CG_KERNEL_DISPLAY_MAX], prev[CG_KERNEL_DISPLAY_MAX] = "";
      size_t said = 0;
      for (size_t i = 0; i < e->kernels->n; i++)
        if (cg_kernel_display_new(e->kernels->v[i], disp, prev))
          fprintf(out, "%s %s", said++ ? "," : "", disp);
      fputs(e->kernels_truncated ? ", ...\n" : "\n", out);
    }
    char why[256];
    cgr_why(e, why, sizeof why);
    fprintf(out, "    why: %s\n", why);
  }
}

/* One line a process: what it was, how it ran, and how its captures fared; the
 * story of the runs in a log (run 1 broke, run 2 was primed) at a glance.
 * Processes that never used CUDA (a shell, a compiler a JIT runs) are one line
 * together when some process did. */
static void print_processes(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  const size_t shown_max = 20;
  size_t cuda = 0, shown = 0, skipped = 0;
  for (size_t p = 0; p < rows->n_procs; p++)
    cuda += rows->procs[p].cuda;
  /* by run, then by pid: several logs (--all) are read one after the other */
  const size_t *order = rep->order;
  fprintf(out, "\n%sProcesses%s (as logged)\n", pal.bold, pal.reset);
  for (size_t i = 0; i < rows->n_procs; i++) {
    size_t p = order[i];
    const cgl_process *pr = &rows->procs[p];
    if ((cuda && !pr->cuda) || shown == shown_max) {
      skipped += !(cuda && !pr->cuda);
      continue;
    }
    shown++;
    size_t captures = a->procs[p].captures, broken = a->procs[p].broken,
           served = a->procs[p].served;
    char who[256], cmd[96], drv[64] = "";
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_process_command(pr, cmd, sizeof cmd);
    if (!pr->cuda)
      snprintf(drv, sizeof drv, ", no CUDA");
    else if (pr->emulate_driver > 0)
      snprintf(drv, sizeof drv, ", emulating CUDA %lld.%lld", pr->emulate_driver / 1000,
               (pr->emulate_driver % 1000) / 10);
    else if (pr->driver_version > 0)
      snprintf(drv, sizeof drv, ", CUDA %lld.%lld", pr->driver_version / 1000,
               (pr->driver_version % 1000) / 10);
    fprintf(out, "  %s %s (%s mode%s): %zu capture%s%s, %s%zu broken%s", who, cmd[0] ? cmd : "?",
            or(cgl_word(&cg_run_modes, pr->mode), "?"), drv, captures, cg_plural(captures),
            cgr_ended_early(pr) ? " logged" : "",
            broken ? pal.red : pal.green, broken, pal.reset);
    if (served)
      fprintf(out, ", %zu load%s served from the priming file", served, cg_plural(served));
    fputc('\n', out);
  }
  if (skipped)
    fprintf(out, "  and %zu more\n", skipped);
  if (cuda && cuda < rows->n_procs) {
    /* their names, once each, a few ("..." when there are more) */
    fprintf(out, "  and %zu process%s without CUDA (", rows->n_procs - cuda,
            cg_plural_es(rows->n_procs - cuda));
    const char *names[5];
    size_t named = 0;
    for (size_t p = 0; p < rows->n_procs; p++) {
      const cgl_process *pr = &rows->procs[p];
      if (pr->cuda || !pr->argc) continue;
      const char *slash = strrchr(pr->argv[0], '/'), *name = slash ? slash + 1 : pr->argv[0];
      bool dup = false;
      for (size_t k = 0; k < named && !dup; k++)
        dup = !strcmp(names[k], name);
      if (dup) continue;
      if (named == sizeof names / sizeof names[0]) {
        fputs(", ...", out);
        break;
      }
      fprintf(out, "%s%s", named ? ", " : "", name);
      names[named++] = name;
    }
    fputs(")\n", out);
  }
}

static void print_kernels(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  fprintf(out, "\n%sKernels loaded during capture%s (deduplicated; loads: load calls during "
               "capture whose image held it; served: of those, from the priming file)\n",
          pal.bold, pal.reset);
  fprintf(out, "  %5s  %6s  %s\n", "loads", "served", "kernel");
  /* A template's instances read alike: a run of them with the same counts
   * is one row, which says how many (the page's title tells them apart). */
  char disp[CG_KERNEL_DISPLAY_MAX], next[CG_KERNEL_DISPLAY_MAX];
  for (size_t k = 0, j; k < a->n_kernels; k = j) {
    const cgr_kernel *kk = &a->kernels[k];
    cg_kernel_display(kk->name, disp, sizeof disp);
    for (j = k + 1; j < a->n_kernels && a->kernels[j].loads == kk->loads &&
                    a->kernels[j].served == kk->served &&
                    !strcmp(cg_kernel_display(a->kernels[j].name, next, sizeof next), disp);
         j++)
      ;
    fprintf(out, "  %5zu  %6zu  %s", kk->loads, kk->served, disp);
    if (j - k > 1)
      fprintf(out, " (%zu instances)", j - k);
    fputc('\n', out);
  }
}

static void print_sites(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  fprintf(out, "\n%sCall sites%s (Python frame first, else native; calls: calls during capture "
               "made there)\n", pal.bold, pal.reset);
  fprintf(out, "  %5s  %s\n", "calls", "site");
  for (size_t s = 0; s < a->n_sites; s++) {
    const cgr_site *st = &a->sites[s];
    fprintf(out, "  %5zu  %s  %s[", st->count, st->site, pal.dim);
    for (size_t i = 0; i < st->n_calls; i++)
      fprintf(out, "%s%s", i ? ", " : "", st->calls[i]);
    if (st->n_kernels) {
      fputs("; kernels:", out);
      char disp[CG_KERNEL_DISPLAY_MAX], prev[CG_KERNEL_DISPLAY_MAX] = "";
      size_t said = 0;
      for (size_t i = 0; i < st->n_kernels && i < 8; i++)
        if (cg_kernel_display_new(st->kernels[i], disp, prev))
          fprintf(out, "%s %s", said++ ? "," : "", disp);
      if (st->n_kernels > 8)
        fprintf(out, " and %zu more", st->n_kernels - 8);
    }
    fprintf(out, "]%s\n", pal.reset);
  }
}

/* Work that escaped a capture (verdict escaped): the driver said ok, but the
 * graph will not do it (legacy-stream work run once, outside the graph) or
 * will read or write host memory as it is at replay (a captured copy to or
 * from pageable memory). Grouped by kind, call and site, with how many were logged. */
static void print_escapes(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fprintf(out, "\n%sEscaped captures%s (the driver said ok, the graph will not do what the program "
               "meant; calls: logged there)\n", pal.bold, pal.reset);
  fprintf(out, "  %5s  %-14s %-22s %s\n", "calls", "kind", "call", "site");
  for (size_t i = 0; i < rows->n_evs; i++) {
    const cgl_event *e = &rows->evs[i];
    if (e->verdict != CG_VERDICT_ESCAPED)
      continue;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) {
      const cgl_event *f = &rows->evs[j];
      seen = f->verdict == CG_VERDICT_ESCAPED && f->kind == e->kind && f->call == e->call && f->site == e->site;
    }
    if (seen)
      continue;
    size_t n = 0;
    for (size_t j = i; j < rows->n_evs; j++) {
      const cgl_event *f = &rows->evs[j];
      n += f->verdict == CG_VERDICT_ESCAPED && f->kind == e->kind && f->call == e->call && f->site == e->site;
    }
    fprintf(out, "  %5zu  %-14s %-22s %s\n", n, cg_event_kind_name(e->kind), e->call ? e->call : "?",
            e->site && e->site[0] ? e->site : "(unknown site)");
  }
  /* what each kind means to do: the findings table's, collected by the analysis */
  for (size_t i = 0; i < a->escapes_note.n; i++)
    fprintf(out, "  %s%s%s\n", pal.dim, a->escapes_note.v[i].sentence, pal.reset);
}

/* "Capture time": the log's line, then each process's figures and its
 * slowest captures with where each began; nothing when no process said. */
static void print_capture_time(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_rows *rows = &rep->rows;
  const char *line = rep->capture_time_line;
  if (!line[0])
    return;
  fprintf(out, "\n%sCapture time%s (wall time inside captures, as each process summed it at exit)\n", pal.bold,
          pal.reset);
  fprintf(out, "  %s\n", line);
  for (size_t p = 0; p < rows->n_procs; p++) {
    const cgl_process *pr = &rows->procs[p];
    if (!pr->has_capture_time || !pr->captures_timed)
      continue;
    char who[256], rank[64], graphs[32], total[32];
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_rank_words(pr, rank, sizeof rank);
    long long g = pr->captures_timed - pr->captures_broken;
    cgr_thousands(g > 0 ? g : 0, graphs, sizeof graphs);
    cgr_duration(pr->capture_ns, total, sizeof total);
    fprintf(out, "  %s%s: %s graph%s in %s", who, rank, graphs, cg_plural((unsigned long long)g), total);
    if (pr->first_capture_ns > 0 && pr->first_replay_ns >= pr->first_capture_ns) {
      char d[32];
      cgr_duration(pr->first_replay_ns - pr->first_capture_ns, d, sizeof d);
      fprintf(out, ", first replay %s after its first begin", d);
    }
    fputc('\n', out);
    for (size_t i = 0; i < pr->n_slowest; i++) {
      char d[32];
      cgr_duration(pr->slowest[i].ns, d, sizeof d);
      fprintf(out, "    %s%-8s%s capture %lld, began at %s\n", i ? "" : "slowest ", d, i ? "        " : "",
              pr->slowest[i].id, *pr->slowest[i].began ? pr->slowest[i].began : "(not logged)");
    }
  }
}

void cgr_print_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  /* The processes that used CUDA, when some did: a JIT's compiler steps
   * (sh, gcc, as) are one line of their own under Processes. */
  size_t cuda = 0;
  for (size_t p = 0; p < rows->n_procs; p++)
    cuda += rows->procs[p].cuda;
  size_t procs = cuda ? cuda : rows->n_procs;
  fprintf(out, "capguard report: %zu log%s, %zu process%s%s, %zu capture%s%s, %s%zu broken%s",
          rows->n_files, cg_plural(rows->n_files), procs, cg_plural_es(procs),
          cuda && cuda < rows->n_procs ? " with CUDA" : "", a->captures, cg_plural(a->captures),
          a->ended_early ? " logged" : "",
          a->n_broken ? pal.red : pal.green, a->n_broken, pal.reset);
  if (a->open_at_exit)
    fprintf(out, ", %s%zu open at exit%s", pal.yellow, a->open_at_exit, pal.reset);
  if (a->ended_early)
    fprintf(out, ", %s%zu ended without an exit record%s", pal.red, a->ended_early, pal.reset);
  if (a->n_stale_reads)
    fprintf(out, ", %s%zu stale read%s%s", pal.red, a->n_stale_reads, cg_plural(a->n_stale_reads), pal.reset);
  fputc('\n', out);
  fprintf(out, "calls during capture: %zu (", a->calls);
  cgr_print_event_counts(out, rep);
  fputc(')', out);
  cgr_print_verdict_counts(out, rep, "; verdicts: ");
  fputc('\n', out);
  if (a->repeats)
    fprintf(out, "repeats: %zu more call%s during capture like one logged (same call, verdict and "
                 "site): counted in the capture records, not above\n",
            a->repeats, cg_plural(a->repeats));
  if (rows->malformed)
    fprintf(out, "%zu malformed log line%s skipped (first: %s)\n", rows->malformed,
            cg_plural(rows->malformed), rows->first_malformed);
  if (rows->cut_files)
    fprintf(out, "%sthe log is cut short%s: the last line of %zu file%s ends without a newline "
                 "(the file was truncated, or a writer was killed mid-line); counts are lower bounds\n",
            pal.red, pal.reset, rows->cut_files, cg_plural(rows->cut_files));
  if (a->log_incomplete)
    fprintf(out, "%sthe log is incomplete%s: a process could not write all its lines (full disk "
                 "or I/O error); counts are lower bounds\n", pal.red, pal.reset);
  if (a->n_runs > 1)
    print_runs(out, rep, pal);
  if (rows->n_procs)
    print_processes(out, rep, pal);
  if (a->ended_early)
    print_ended(out, rep, pal);
  cgr_print_ranks_text(out, rep, pal, ""); /* when the log holds a job of several ranks */
  print_capture_time(out, rep, pal);
  if (a->n_broken)
    print_broken(out, rep, pal);
  if (a->verdicts[CG_VERDICT_ESCAPED])
    print_escapes(out, rep, pal);
  if (a->open_unbroken)
    print_open(out, rep, pal);
  if (a->n_kernels)
    print_kernels(out, rep, pal);
  if (a->n_sites)
    print_sites(out, rep, pal);
  cgr_print_stale_text(out, rep, pal);
  cgr_print_hang_text(out, rep, pal);
  fprintf(out, "\n%sWhat to do%s\n", pal.bold, pal.reset);
  if (!a->run_advice) {
    for (size_t i = 0; i < a->advice.n; i++)
      cgf_print(out, &a->advice.v[i], "  - ", "      ");
    return;
  }
  /* --all: each run's own advice under its name */
  for (size_t r = 0; r < a->n_runs; r++) {
    const cgl_process *top = &rep->whole.procs[rep->whole.runs[r].first_proc];
    char cmd[96];
    cgr_process_command(top, cmd, sizeof cmd);
    fprintf(out, "  run %zu: pid %lld %s\n", r + 1, top->pid, cmd[0] ? cmd : "?");
    for (size_t i = 0; i < a->run_advice[r].n; i++)
      cgf_print(out, &a->run_advice[r].v[i], "    - ", "        ");
  }
}
