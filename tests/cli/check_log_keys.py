"""The log's field names have one owner: detect/include/capguard/log_keys.h.

- The writer (detect/log/event_format.c) and the readers (tools/log/log_reader.c,
  tools/log/log_site.c) spell no field name themselves: no `"name"` handed to a
  key-taking function, no `\\"name\\":` inside a literal.
- The report's JSON (tools/render/report_json.c) gives a fact the log has under
  the log's name for it, through the same list: it spells no log field name
  as a key (an argument to jansson's json_pack or json_object_set_new). So
  does the trace (tools/render/report_trace.c) in its events' args; the trace
  format's own keys ("pid", "tid", ...) are the trace format's.
- The writer writes every name of the list (none is left over), and
  docs/log-format.md documents each as `name`.

Usage: check_log_keys.py SOURCE_ROOT
"""
import os
import re
import sys

WRITER = "detect/log/event_format.c"
READERS = ["tools/log/log_reader.c", "tools/log/log_site.c"]
REPORT = "tools/render/report_json.c"
TRACE = "tools/render/report_trace.c"
# Chrome's trace event format's own keys, its categories ("capture", "call") and its
# metadata event "thread_name" (which the log's own "thread_name" does not make a log key there).
TRACE_OWN = {"pid", "tid", "capture", "call", "thread_name"}
# The functions that take a field name: the writer's and the readers'.
KEY_TAKERS = r"(put_kv_str|put_kv_u64|put_kv_int|put_kv_hex|put_key|put_jstr|num|str|arr|word|json_object_get)"


def code_of(path):
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


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
    report = code_of(os.path.join(root, REPORT))
    for m in re.finditer(r'[(,]\s*"([a-z_]+)"\s*(?=[,)])', report):
        if m.group(1) in names:
            failures.append(f'{REPORT}: spells the log\'s field "{m.group(1)}" (log_keys.h has it)')
    trace = code_of(os.path.join(root, TRACE))
    for m in re.finditer(r'[(,]\s*"([a-z_]+)"\s*(?=[,)])', trace):
        if m.group(1) in names - TRACE_OWN:
            failures.append(f'{TRACE}: spells the log\'s field "{m.group(1)}" (log_keys.h has it)')
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
