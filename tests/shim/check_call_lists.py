"""The watched calls are listed once, as rows (shim/driver/entry_point_rows.h);
the two lists people read are checked against them:

- each event kind's "what it means" in detect/include/capguard/log_schema.h
  names exactly the calls whose rows report that kind (`cuModuleLoad*`
  covering every row it starts; a sentence naming no call describes its rows
  by category); a kind no row reports (the driver's log
  names it, or a capture's end) names only calls that are rows;
- docs/calls.md's table "Calls that break captures on every driver" names
  every BREAKER, DEFERRABLE and STREAM_WORK row (a STREAM_WORK row by a
  call of the same stem: cuMemsetD8 for cuMemsetD16), and nothing that is
  no row.

A name is a row's without its variant suffix (`_v2`, `_ptsz`): every
exported variant of a call is a row of its own. So adding a watched call is
adding its row, and this test says which sentence to extend.

Usage: check_call_lists.py SOURCE_ROOT
"""
import os
import re
import sys


# The families whose rows report an event kind; the breaking ones are
# docs/calls.md's table's.
BREAKING = ("BREAKER", "DEFERRABLE", "STREAM_WORK")
REPORTING = BREAKING + ("LOAD",)


def base(name):
    return re.sub(r"(_v\d+)?(_ptsz)?$", "", name)


def rows(root):
    """[(family, name, kind enum or None)] from the rows, trait macros expanded."""
    text = open(os.path.join(root, "shim/driver/entry_point_rows.h")).read()
    text = text.replace("\\\n", " ")
    traits = {}
    for m in re.finditer(r"#define (CG_\w+_TRAITS)(\([^)]*\))?\s+(.*)", text):
        traits[m.group(1)] = m.group(3)
    out = []
    for m in re.finditer(r"\bX\((\w+),\s*(cu\w+),(.*?)\)\s*(?=X\(|CG_\w+_ROWS\(|$|\n)", text):
        family, name, rest = m.group(1), m.group(2), m.group(3)
        for _ in range(4):  # traits made of traits
            for t, body in traits.items():
                rest = rest.replace(t, body)
        kind = re.search(r"\bCG_EV_\w+", rest)
        out.append((family, name, kind.group(0) if kind else None))
    return out


def schema_kinds(root):
    """{enum: [names in its 'what']} from log_schema.h's CG_EVENT_KINDS."""
    text = open(os.path.join(root, "detect/include/capguard/log_schema.h")).read().replace("\\\n", " ")
    block = re.search(r"#define CG_EVENT_KINDS\(X\)(.*?)\n", text).group(1)
    out = {}
    for m in re.finditer(r'X\((CG_EV_\w+),\s*"[^"]*",\s*\w+,\s*((?:"[^"]*"\s*)+)\)', block):
        what = "".join(re.findall(r'"([^"]*)"', m.group(2)))
        out[m.group(1)] = re.findall(r"\bcu[A-Z]\w*\*?", what)
    return out


def table_calls(root):
    text = open(os.path.join(root, "docs", "calls.md")).read()
    section = text.split("## Calls that break captures on every driver", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `cu"):
            names |= set(re.findall(r"`(cu\w+)`", line.split("|")[1]))
    return names


def stem(name):
    """cuMemsetD16 -> cuMemset, cuLaunchKernelEx -> cuLaunch"""
    m = re.match(r"cu[A-Z][a-z]+", name)
    return m.group(0) if m else name


def covers(listed, name):
    return listed.endswith("*") and name.startswith(listed[:-1]) or listed == name


def main():
    root = sys.argv[1]
    rs = rows(root)
    if len(rs) < 40:
        print(f"only {len(rs)} rows read from entry_point_rows.h: the parse is broken")
        return 1
    kind_of_family = {"LOAD": "CG_EV_MODULE_LOAD"}
    failures = []
    by_kind = {}
    for family, name, kind in rs:
        kind = kind_of_family.get(family, kind)
        if family in REPORTING:
            if not kind:
                failures.append(f"row {name}: no event kind found")
                continue
            by_kind.setdefault(kind, set()).add(base(name))
    kinds = schema_kinds(root)
    all_rows = {base(n) for _, n, _ in rs}
    for kind in sorted(set(by_kind) - set(kinds)):
        failures.append(f"rows report {kind}, which log_schema.h's event kinds do not have")
    # A kind may have no rows (one the driver's log or a capture's end names).
    for kind, listed in sorted(kinds.items()):
        names = by_kind.get(kind, set())
        for n in sorted(names):
            if listed and not any(covers(l, n) for l in listed):  # no call named: a category ("a launch, copy or memset")
                failures.append(f"log_schema.h: {kind}'s sentence does not name {n} (a row of that kind)")
        for l in listed:
            if not any(covers(l, n) for n in (names or all_rows)):
                failures.append(f"log_schema.h: {kind}'s sentence names {l}, which no row of that kind is")
    breakers = {base(n) for f, n, _ in rs if f in BREAKING}
    table = table_calls(root)
    if not table:
        failures.append("docs/calls.md: no table under 'Calls that break captures on every driver'")
    stems = {stem(t) for t in table}
    work = {base(n) for f, n, _ in rs if f == "STREAM_WORK"}
    for n in sorted(breakers - table):
        if n in work and stem(n) in stems:
            continue  # the legacy-stream rows' many variants: a call of the same stem stands for them
        failures.append(f"docs/calls.md: the calls table does not name {n} (a {'/'.join(BREAKING)} row)")
    for n in sorted(table - all_rows):
        failures.append(f"docs/calls.md: the calls table names {n}, which is no row")
    if failures:
        print("\n".join(failures))
        return 1
    print(f"{len(rs)} rows; log_schema.h's {len(kinds)} event kinds and docs/calls.md's table of "
          f"{len(table)} calls name exactly them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
