"""Every link between the project's documents leads somewhere: each relative
link in README.md, HACKING.md and docs/*.md, and each `path` they name in
backquotes that looks like one of the tree's files (a folder/name.ext under
a top-level folder), exists. Text that moved (README to docs/, core/ to
detect/, tools/ into floors) must take its readers with it.

Usage: check_doc_links.py SOURCE_ROOT
"""
import glob
import os
import re
import sys

TOP = ("shim", "detect", "tools", "tests", "bench", "docs", "python", "testkit")


def main():
    root = sys.argv[1]
    docs = ["README.md", "HACKING.md"] + sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    failures, n = [], 0
    for d in docs:
        path = os.path.join(root, d)
        if not os.path.exists(path):
            failures.append(f"{d}: missing")
            continue
        text = open(path).read()
        here = os.path.dirname(path)
        for m in re.finditer(r"\]\(([^)#\s]+)(#[^)]*)?\)", text):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            n += 1
            if not os.path.exists(os.path.join(here, target)):
                failures.append(f"{d}: link to {target}, which does not exist")
        for m in re.finditer(r"`((?:%s)/[\w./-]+\.\w+)`" % "|".join(TOP), text):
            n += 1
            if not os.path.exists(os.path.join(root, m.group(1))):
                failures.append(f"{d}: names {m.group(1)}, which does not exist")
    if failures:
        print("\n".join(failures))
        return 1
    print(f"{len(docs)} documents, {n} links and paths, all there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
