#!/usr/bin/env python3
"""The renderings print the report and never read the log (tools/README.md,
the floor render/): the command reads the log, meaning/report.c builds the
report value once, and every file of tools/render/ prints that value. So a
file of tools/render/ (its comments and strings aside):

- includes no header of tools/log/ but log_pool.h (the JSON text helpers);
- never names the log's type, cgl_log, nor reaches it through a member
  named log or all (the analysis keeps both pointers for meaning/ alone);
- calls no function of tools/log/ that takes a log (read, group, view,
  census, a capture's state: each is found in the headers, so a new one is
  covered without this file changing);
- runs no analysis, asks the findings table nothing, and removes no file.

A failure names the file, the line and what it does.

Usage: check_render_reads_report.py SOURCE_ROOT
"""
import os
import re
import sys

ALLOWED_LOG_HEADERS = {"log_pool.h"}
# What only the command (cmd/) or meaning/ may do.
FORBIDDEN_CALLS = {
    "cgr_analyse": "runs the analysis (meaning/report.c does, once)",
    "cgr_count_runs": "counts the runs (meaning/report.c does, once)",
    "cgr_report_build": "builds the report (the command does)",
    "cgf_first": "asks the findings table (the report holds its advice)",
    "cgf_collect": "asks the findings table (the report holds its advice)",
    "unlink": "removes a file (the command does)",
    "remove": "removes a file (the command does)",
    "unlinkat": "removes a file (the command does)",
}


def strip(text):
    """The code with comments and string and character literals blanked,
    lines kept, so that a word in a sentence is not taken for code."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def log_functions(log_dir):
    """The functions tools/log/'s headers declare with a cgl_log parameter."""
    names = set()
    for name in sorted(os.listdir(log_dir)):
        if not name.endswith(".h"):
            continue
        code = strip(open(os.path.join(log_dir, name), encoding="utf-8").read())
        # a declaration: its name, then everything to the ';' or '{' that ends it
        for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(([^;{]*)\)\s*[;{]", code):
            if re.search(r"\bcgl_log\b", m.group(2)):
                names.add(m.group(1))
    return names


def check(path, rel, log_headers, log_calls):
    text = open(path, encoding="utf-8").read()
    failures = []
    for m in re.finditer(r'^\s*#\s*include\s*[<"]([^">]+)[">]', text, re.M):
        header = os.path.basename(m.group(1))
        if header in log_headers and header not in ALLOWED_LOG_HEADERS:
            line = text.count("\n", 0, m.start()) + 1
            failures.append(f"{rel}:{line}: includes {header}, a header of the log reader (tools/log/)")
    code = strip(text)
    rules = [(re.compile(r"\bcgl_log\b"), "names the log's type, cgl_log"),
             (re.compile(r"(->|\.)\s*(log|all)\b"), "reaches the raw log through a member named log or all")]
    rules += [(re.compile(r"\b" + re.escape(f) + r"\s*\("), f"calls {f}, which reads the log") for f in sorted(log_calls)]
    rules += [(re.compile(r"(?<![\w.>])" + re.escape(f) + r"\s*\("), f"calls {f}: {why}")
              for f, why in FORBIDDEN_CALLS.items()]
    for lineno, line in enumerate(code.split("\n"), 1):
        for rx, what in rules:
            if rx.search(line):
                failures.append(f"{rel}:{lineno}: {what}")
    return failures


def main():
    root = os.path.abspath(sys.argv[1])
    log_dir = os.path.join(root, "tools", "log")
    render_dir = os.path.join(root, "tools", "render")
    log_headers = {n for n in os.listdir(log_dir) if n.endswith(".h")}
    log_calls = log_functions(log_dir)
    if "cgl_read_file" not in log_calls or "cgl_view" not in log_calls:
        print(f"the log reader's functions were not found in {log_dir}: is this the source root?")
        return 1
    files = sorted(n for n in os.listdir(render_dir) if n.endswith((".c", ".h")))
    if not files:
        print(f"no source in {render_dir}")
        return 1
    failures = []
    for name in files:
        failures += check(os.path.join(render_dir, name), f"tools/render/{name}", log_headers, log_calls)
    for f in failures:
        print(f)
    print(f"{len(files)} files of tools/render/ checked against {len(log_calls)} functions of the log reader: "
          f"{len(failures)} failure{'s' if len(failures) != 1 else ''}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
