/* report_hang.h. Each hang is the report's sentence for it (meaning/hang_words.c). */
#include "sections.h"
#include "html_text.h"

#include "capguard/event.h"
#include "capguard/log_keys.h"

void cgr_hangs_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  if (!rep->any_hang)
    return;
  fprintf(out, "\n%sHangs (CAPGUARD_HANG_S)%s\n", pal.bold, pal.reset);
  const cgm_lineup *l = rep->hang_lineup;
  for (size_t i = 0; i < rep->n_hang_lineup; i++)
    fprintf(out, "  %s%s%s\n", l[i].busy ? "" : pal.red, l[i].text, l[i].busy ? "" : pal.reset);
  for (size_t i = 0; i < rep->n_hangs; i++)
    fprintf(out, "  %s\n", rep->hangs[i].text);
}

static json_t *jtext(const char *s) { return cgl_json_text(s ? s : ""); }

static json_t *event_json(const cgr_report *rep, const cgr_hang_said *said) {
  const cgl_hang *h = said->hang;
  return json_pack("{s:s, s:I, s:o, s:o, s:I, s:o, s:I, s:I, s:I, s:o}", CG_KEY_EVENT,
                   cg_event_kind_name(h->kind), CG_KEY_PID, (json_int_t)rep->rows.procs[h->proc].pid,
                   CG_KEY_CALL, jtext(h->call), CG_KEY_EXEC, jtext(h->exec), CG_KEY_LAUNCHES,
                   (json_int_t)h->launches, CG_KEY_BEGAN, jtext(h->began), CG_KEY_COLLECTIVES,
                   (json_int_t)h->collectives, CG_KEY_EXECS, (json_int_t)h->execs, CG_KEY_WAITED_NS,
                   (json_int_t)h->waited_ns, "text", jtext(said->text));
}

static json_t *hang_json(const cgr_report *rep) {
  if (!rep->any_hang)
    return NULL;
  const cgr_rows *rows = &rep->rows;
  json_t *root = json_object(), *lineup = json_array(), *evs = json_array(), *alive = json_array();
  const cgm_lineup *l = rep->hang_lineup;
  for (size_t i = 0; i < rep->n_hang_lineup; i++)
    json_array_append_new(
        lineup, json_pack("{s:o, s:o, s:b}", "text", jtext(l[i].text), "behind_pid",
                          l[i].behind >= 0 ? json_integer(rows->procs[l[i].behind].pid) : json_null(), "busy",
                          l[i].busy));
  for (size_t i = 0; i < rep->n_hangs; i++) {
    const cgr_hang_said *said = &rep->hangs[i];
    const cgl_process *pr = &rows->procs[said->proc];
    if (said->hang)
      json_array_append_new(evs, event_json(rep, said));
    else
      json_array_append_new(
          alive, json_pack("{s:I, s:I, s:o}", CG_KEY_PID, (json_int_t)pr->pid, CG_KEY_COLLECTIVE_EXECS,
                           (json_int_t)cgl_process_rare(pr)->collective_execs, "text", jtext(said->text)));
  }
  json_object_set_new(root, "lineup", lineup);
  json_object_set_new(root, CG_KEY_EVENTS, evs);
  json_object_set_new(root, "alive_at_exit", alive);
  return root;
}

void cgr_hangs_html(FILE *o, const cgr_report *rep) {
  if (!rep->any_hang)
    return;
  fputs("<h2>Hangs (CAPGUARD_HANG_S)</h2>\n<ul>\n", o);
  for (size_t i = 0; i < rep->n_hang_lineup; i++) {
    fputs("<li><b>", o);
    cgr_html_text(o, rep->hang_lineup[i].text);
    fputs("</b></li>\n", o);
  }
  for (size_t i = 0; i < rep->n_hangs; i++) {
    fputs("<li>", o);
    cgr_html_text(o, rep->hangs[i].text);
    fputs("</li>\n", o);
  }
  fputs("</ul>\n", o);
}

void cgr_hangs_trace(json_t *evs, const cgr_report *rep, long long t0) {
  const cgr_rows *rows = &rep->rows;
  for (size_t i = 0; i < rows->n_hangs; i++) {
    const cgl_hang *h = &rows->hangs[i];
    double ts = cgr_trace_us(h->time_ns, t0);
    json_array_append_new(
        evs, json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:{s:o, s:o, s:I, s:I, s:o}}", "ph", "i", "s",
                       "p", "cat", "hang", "name", cg_event_kind_name(h->kind), "ts", ts, "pid",
                       (json_int_t)rows->procs[h->proc].pid, "tid", (json_int_t)h->tid, "args", CG_KEY_CALL,
                       jtext(h->call), CG_KEY_EXEC, jtext(h->exec), CG_KEY_LAUNCHES, (json_int_t)h->launches,
                       CG_KEY_WAITED_NS, (json_int_t)h->waited_ns, CG_KEY_BEGAN, jtext(h->began)));
  }
}

void cgr_hangs_json(json_t *root, const cgr_report *rep) {
  json_t *hangs = hang_json(rep);
  if (hangs)
    json_object_set_new(root, CG_KEY_HANG, hangs);
}
