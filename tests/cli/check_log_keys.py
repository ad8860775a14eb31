"""The log's field names have one owner: detect/include/capguard/log_keys.h.

- The writer (detect/log/event_format.c) and the readers (tools/log/log_reader.c,
  tools/log/log_site.c) spell no field name themselves: no `"name"` handed to a
  key-taking function, no `\\"name\\":` inside a literal.
- The report's JSON (tools/render/: the frame report_json.c and each
  section's JSON printer, sections.c) gives a fact the log has under the
  log's name for it, through the same list: it spells no log field name as a
  key (an argument to jansson's json_pack or json_object_set_new). So does
  the trace (the frame report_trace.c and each section's trace printer, a
  function whose name ends in _trace) in its events' args; the trace format's
  own keys ("pid", "tid", ...) are the trace format's.
- The writer writes every name of the list (none is left over), and
  docs/log-format.md documents each as `name`.

Usage: check_log_keys.py SOURCE_ROOT
"""
import os
import re
import sys

WRITER = "detect/log/event_format.c"
READERS = ["tools/log/log_reader.c", "tools/log/log_site.c"]
RENDER = "tools/render"
TRACE = "tools/render/report_trace.c"
# Chrome's trace event format's own keys, its categories ("capture", "call", "hang", "stale") and its
# metadata event "thread_name" (which the log's own "thread_name" does not make a log key there).
TRACE_OWN = {"pid", "tid", "capture", "call", "hang", "stale", "thread_name"}
# The functions that take a field name: the writer's and the readers'.
KEY_TAKERS = r"(put_kv_str|put_kv_u64|put_kv_int|put_kv_hex|put_key|put_jstr|num|str|arr|word|json_object_get)"


def code_of(path):
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def render_parts(root):
    """The JSON and the trace as tools/render/ writes them, as (name, keys of
    its own, code): the frames report_json.c and report_trace.c, the JSON
    pieces json_rows.c, and in each section file (sections.c) its JSON
    printers and their helpers (functions whose name says json) and its trace
    printers (functions named *_trace), which may use the trace format's own
    keys."""
    parts = []
    rel_dir = RENDER
    for name in sorted(os.listdir(os.path.join(root, rel_dir))):
        if not name.endswith(".c"):
            continue
        rel = f"{rel_dir}/{name}"
        code = code_of(os.path.join(root, rel))
        if rel == TRACE:
            parts.append((rel, TRACE_OWN, code))
            continue
        if name in ("report_json.c", "json_rows.c"):
            parts.append((rel, set(), code))
            continue
        json, trace = [], []
        # top-level functions: one-liners, or a body that ends in a '}' alone on its line
        for m in re.finditer(r"^\w[^\n;]*?\b(\w+)\([^;{]*\)\s*\{(?:[^\n]*\}$|.*?^\})", code, re.S | re.M):
            if m.group(1).endswith("_trace"):
                trace.append(m.group(0))
            elif "json" in m.group(1):
                json.append(m.group(0))
        parts.append((rel, set(), "".join(json)))
        parts.append((rel + " (trace)", TRACE_OWN, "".join(trace)))
    if not any(p[0].endswith("report_json.c") for p in parts) or not any(p[2] for p in parts[2:]):
        sys.exit(f"the render files were not found under {RENDER}: is this the source root?")
    return parts


def main():
    root = sys.argv[1]
    keys = dict(re.findall(r'#define (CG_KEY_\w+) "([^"]+)"',
                           open(os.path.join(root, "detect/include/capguard/log_keys.h")).read()))
    if len(keys) < 30:
        print(f"only {len(keys)} names read from log_keys.h: the parse is broken")
        return 1
    names = set(keys.values())
    failures = []
    for rel in [WRITER] + READERS:
        code = code_of(os.path.join(root, rel))
        for m in re.finditer(r'\\"([a-z_]+)\\":', code):
            if m.group(1) in names:
                failures.append(f'{rel}: spells the field "{m.group(1)}" inside a literal')
        for m in re.finditer(r"\b" + KEY_TAKERS + r'\(([^;]*?)"([a-z_]+)"', code):
            if m.group(3) in names:
                failures.append(f'{rel}: hands {m.group(1)}() the field "{m.group(3)}" spelt out')
    # Every string literal handed on as an argument (after "(" or ",", before
    # "," or ")"): a key of json_pack's or json_object_set_new's, or a value.
    for rel, own, code in render_parts(root):
        for m in re.finditer(r'[(,]\s*"([a-z_]+)"\s*(?=[,)])', code):
            if m.group(1) in names - own:
                failures.append(f'{rel}: spells the log\'s field "{m.group(1)}" (log_keys.h has it)')
    writer = code_of(os.path.join(root, WRITER))
    for macro, name in sorted(keys.items()):
        if not re.search(r"\b" + macro + r"\b", writer):
            failures.append(f"{macro} ({name}): the writer never writes it")
    doc = open(os.path.join(root, "docs/log-format.md")).read()
    for macro, name in sorted(keys.items()):
        if f"`{name}`" not in doc and f'"{name}"' not in doc:  # `name`, or "name" in an example
            failures.append(f"docs/log-format.md does not document the field `{name}`")
    if failures:
        print("\n".join(failures))
        return 1
    print(f"{len(keys)} field names, spelt only in log_keys.h, all written and documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
