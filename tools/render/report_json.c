/* --json: the report for machines, one JSON document (schema "capguard-report", v 1): its frame
 * (schema, logs, lines read), then the sections' keys in the document's order (sections.c). */
#include "json_rows.h"
#include "report_render.h"
#include "sections.h"
#include "capguard/log_keys.h"

int cgr_print_json(FILE *out, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  json_t *root = json_object();
  json_object_set_new(root, "schema", json_string("capguard-report"));
  json_object_set_new(root, CG_KEY_V, json_integer(1));
  json_t *logs = json_array();
  for (size_t i = 0; i < rows->n_files; i++)
    json_array_append_new(logs, jtext(rows->files[i]));
  json_object_set_new(root, "logs", logs);
  json_object_set_new(root, "lines",
                      json_pack("{s:I, s:I, s:I, s:I, s:I, s:o}", "read", (json_int_t)rows->lines,
                                "malformed", (json_int_t)rows->malformed, "newer_version",
                                (json_int_t)rows->newer, "unknown_type", (json_int_t)rows->unknown,
                                "files_cut_short", (json_int_t)rows->cut_files, "first_malformed",
                                rows->malformed ? jtext(rows->first_malformed) : json_null()));

  cgr_sections_json(root, rep);

  int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  fputc('\n', out);
  json_decref(root);
  return rc;
}
