"""No function of capguard's own code is longer than 120 lines: a
function that long does several jobs, and each is easier to read,
test and change on its own.

Every .c and .h file under shim/, detect/, tools/, tests/, bench/ and testkit/
is read; comments, strings
and preprocessor lines (a macro's continued lines included) are blanked out,
then each function definition is found by its braces: a `{` opened at file
level whose text since the previous declaration ends in a parameter list's
`)` (not an initializer, a struct, union or enum). Its length is counted from
the line its declaration starts on to its closing brace.

Usage: check_function_length.py SOURCE_ROOT [LIMIT]
"""
import os
import re
import sys

FOLDERS = ("shim", "detect", "tools", "tests", "bench", "testkit")


def blank(text):
    """Comments, string and character literals and preprocessor lines turned
    into spaces, newlines kept (so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#" or (at_line_start and c in " \t" and re.match(r"[ \t]*#", text[i:])):
            # a preprocessor line, with its continuations
            while i < n:
                if text[i] == "\n" and text[i - 1] != "\\":
                    break
                out.append("\n" if text[i] == "\n" else " ")
                i += 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
            at_line_start = False
            continue
        out.append(c)
        at_line_start = c == "\n" or (at_line_start and c in " \t")
        i += 1
    return "".join(out)


def functions(path):
    """[(name, first line, last line)] of the file's function definitions."""
    code = blank(open(path, encoding="utf-8", errors="replace").read())
    found = []
    depth = 0
    head_start = 0  # offset where the current file-level declaration began
    start = None
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                head = code[head_start:i]
                if re.search(r"\)\s*(__attribute__\s*\(\(.*\)\)\s*)*$", head, re.S) and \
                        not re.search(r"=\s*$|\b(struct|union|enum)\b[^(]*$", head, re.S):
                    m = re.search(r"(\w+)\s*\(", head)
                    first = head_start + len(head) - len(head.lstrip())
                    start = (m.group(1) if m else "?", code.count("\n", 0, first) + 1)
                else:
                    start = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if start:
                    found.append((start[0], start[1], code.count("\n", 0, i) + 1))
                start = None
                head_start = i + 1
        elif c == ";" and depth == 0:
            head_start = i + 1
    return found


def main():
    root = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 120
    files = []
    for folder in FOLDERS:
        for d, _, names in os.walk(os.path.join(root, folder)):
            files += [os.path.join(d, f) for f in names if f.endswith((".c", ".h"))]
    if len(files) < 150:
        print(f"only {len(files)} files found under {', '.join(FOLDERS)}: wrong root?")
        return 1
    total, longest, too_long = 0, (0, ""), []
    for path in sorted(files):
        rel = os.path.relpath(path, root)
        for name, first, last in functions(path):
            total += 1
            lines = last - first + 1
            longest = max(longest, (lines, f"{rel}:{first} {name}"))
            if lines > limit:
                too_long.append(f"{rel}:{first}: {name} is {lines} lines (at most {limit})")
    if total < 1000:
        print(f"only {total} functions found: the parse is broken")
        return 1
    if too_long:
        print("\n".join(too_long))
        return 1
    print(f"{total} functions in {len(files)} files; the longest, {longest[1]}, is {longest[0]} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
