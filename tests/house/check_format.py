#!/usr/bin/env python3
"""The code's format (.clang-format): every C source and header of the
production tree (shim/, detect/, tools/, testkit/) passes clang-format,
except the files listed in tests/house/format_exempt.txt, which are older
than the style and are formatted when next rewritten whole. The list only
shrinks: a listed file that passes must leave it, and a listed file that is
gone is said.

Needs the clang-format of Debian 12 (14.x): other versions format a few
constructs differently, so they are not asked (skipped with the reason).

Usage: check_format.py SOURCE_ROOT"""
import os
import re
import shutil
import subprocess
import sys

ROOTS = ("shim", "detect", "tools", "testkit")
VERSION = 14


def main():
    root = os.path.abspath(sys.argv[1])
    tool = shutil.which("clang-format")
    if not tool:
        print("SKIP: clang-format is not installed (tools/install-deps.sh installs it)")
        return 77
    out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\d+)\.", out)
    if not m or int(m.group(1)) != VERSION:
        print(f"SKIP: clang-format {m.group(1) if m else '?'} here; the tree's format is clang-format {VERSION}'s")
        return 77
    exempt_file = os.path.join(root, "tests", "house", "format_exempt.txt")
    exempt = {l.strip() for l in open(exempt_file) if l.strip() and not l.startswith("#")}
    files = []
    for top in ROOTS:
        for d, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith((".c", ".h"))]
    failures = []
    for f in sorted(files):
        ok = subprocess.run([tool, "--dry-run", "-Werror", "--style=file", f], cwd=root,
                            capture_output=True).returncode == 0
        if not ok and f not in exempt:
            failures.append(f"{f}: differs from .clang-format (git clang-format formats the lines you changed)")
        elif ok and f in exempt:
            failures.append(f"{f}: passes now: take it off {os.path.relpath(exempt_file, root)}")
    for f in sorted(exempt - set(files)):
        failures.append(f"{f}: on {os.path.relpath(exempt_file, root)} but not in the tree")
    if len(files) < 100:
        failures.append(f"only {len(files)} files found under {ROOTS}: not this tree")
    print("\n".join(failures) if failures else
          f"{len(files)} files: {len(files) - len(exempt)} formatted, {len(exempt)} exempt (older than the style)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
