"""The watched calls are listed once, as rows (shim/driver/entry_point_rows.h);
the two lists people read are checked against them:

- each event kind's "what it means" in core/include/capguard/log_schema.h
  names exactly the calls whose rows report that kind (`cuModuleLoad*`
  covering every row it starts);
- README.md's table "Calls that break captures on every driver" names
  exactly the BREAKER and DEFERRABLE rows.

A name is a row's without its variant suffix (`_v2`, `_ptsz`): every
exported variant of a call is a row of its own. So adding a watched call is
adding its row, and this test says which sentence to extend.

Usage: check_call_lists.py SOURCE_ROOT
"""
import os
import re
import sys


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
    for m in re.finditer(r"\bX\((\w+),\s*(cu\w+),(.*?)\)\s*(?=X\(|CG_BREAKER_ROWS|$|\n)", text):
        family, name, rest = m.group(1), m.group(2), m.group(3)
        for t, body in traits.items():
            rest = rest.replace(t, body)
        kind = re.search(r"\bCG_EV_\w+", rest)
        out.append((family, name, kind.group(0) if kind else None))
    return out


def schema_kinds(root):
    """{enum: [names in its 'what']} from log_schema.h's CG_EVENT_KINDS."""
    text = open(os.path.join(root, "core/include/capguard/log_schema.h")).read().replace("\\\n", " ")
    block = re.search(r"#define CG_EVENT_KINDS\(X\)(.*?)\n", text).group(1)
    out = {}
    for m in re.finditer(r'X\((CG_EV_\w+),\s*"[^"]*",\s*\w+,\s*((?:"[^"]*"\s*)+)\)', block):
        what = "".join(re.findall(r'"([^"]*)"', m.group(2)))
        out[m.group(1)] = re.findall(r"\bcu[A-Z]\w*\*?", what)
    return out


def readme_calls(root):
    text = open(os.path.join(root, "README.md")).read()
    section = text.split("## Calls that break captures on every driver", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `cu"):
            names |= set(re.findall(r"`(cu\w+)`", line.split("|")[1]))
    return names


def covers(listed, name):
    return listed.endswith("*") and name.startswith(listed[:-1]) or listed == name


def main():
    root = sys.argv[1]
    rs = rows(root)
    if len(rs) < 40:
        print(f"only {len(rs)} rows read from entry_point_rows.h: the parse is broken")
        return 1
    kind_of_family = {"LOAD": "CG_EV_MODULE_LOAD", "UNLOAD": "CG_EV_MODULE_UNLOAD"}
    failures = []
    by_kind = {}
    for family, name, kind in rs:
        kind = kind_of_family.get(family, kind)
        if family in ("BREAKER", "DEFERRABLE", "LOAD", "UNLOAD"):
            if not kind:
                failures.append(f"row {name}: no event kind found")
                continue
            by_kind.setdefault(kind, set()).add(base(name))
    kinds = schema_kinds(root)
    if set(kinds) != set(by_kind):
        failures.append(f"event kinds in log_schema.h {sorted(kinds)} and in the rows {sorted(by_kind)} differ")
    for kind, listed in sorted(kinds.items()):
        names = by_kind.get(kind, set())
        for n in sorted(names):
            if not any(covers(l, n) for l in listed):
                failures.append(f"log_schema.h: {kind}'s sentence does not name {n} (a row of that kind)")
        for l in listed:
            if not any(covers(l, n) for n in names):
                failures.append(f"log_schema.h: {kind}'s sentence names {l}, which no row of that kind is")
    breakers = {base(n) for f, n, _ in rs if f in ("BREAKER", "DEFERRABLE")}
    table = readme_calls(root)
    if not table:
        failures.append("README.md: no table under 'Calls that break captures on every driver'")
    for n in sorted(breakers - table):
        failures.append(f"README.md: the calls table does not name {n} (a BREAKER or DEFERRABLE row)")
    for n in sorted(table - breakers):
        failures.append(f"README.md: the calls table names {n}, which is no BREAKER or DEFERRABLE row")
    if failures:
        print("\n".join(failures))
        return 1
    print(f"{len(rs)} rows; log_schema.h's {len(kinds)} event kinds and README.md's table of "
          f"{len(table)} calls name exactly them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
