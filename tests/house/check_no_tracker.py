"""The product names no tracker issue and no document outside the
repository: a reader of the project has neither. A comment, a test or a
document says what a thing is (the attack of docs/reliability.md it
answers, the measurement of docs/driver-semantics.md it follows), never a
tracker number or a path on the machine it was written on.

Every text file under SOURCE_ROOT is read, build folders and .git aside.

Usage: check_no_tracker.py SOURCE_ROOT
"""
import os
import re
import sys

# A tracker number in any spelling seen in the tree's history: the word
# and a number, spaced, hyphened or with '#'; and the outside document the
# driver's rules were first written in.
FORBIDDEN = [
    (re.compile(r"\bissues?[ -]?#?[0-9]+", re.I), "a tracker issue's number"),
    (re.compile(r"\bissues [0-9]+(, [0-9]+)+", re.I), "tracker issues' numbers"),
    (re.compile(r"capture" r"-semantics\.md"), "a document outside the repository (docs/driver-semantics.md)"),
    (re.compile(r"/work/" r"shared\b"), "a path outside the repository"),
]
SKIP_DIRS = {".git", "__pycache__", "corpus"}


def main():
    root = sys.argv[1]
    failures, n = [], 0
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue  # images, cubins: no prose
            n += 1
            for i, line in enumerate(text.splitlines(), 1):
                for pattern, what in FORBIDDEN:
                    m = pattern.search(line)
                    if m:
                        failures.append(f"{os.path.relpath(path, root)}:{i}: {what}: {m.group(0)!r}")
    if failures:
        print("\n".join(failures))
        print(f"{len(failures)} lines name what a reader of the project cannot follow: say what the thing is")
        return 1
    print(f"{n} text files, none names a tracker issue or a document outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
