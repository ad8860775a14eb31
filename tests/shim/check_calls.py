"""The floors of the shim (shim/README.md) and of the tools (tools/README.md),
"The floors": every arrow points down.

- Each source lives in a floor's folder (the tree's own folder is the top
  floor).
- A use goes to the same floor or a lower one, never up: a call (a call or
  tail-jump relocation in one file's object to a function defined in
  another's), a use of another file's global variable from code (a function
  pointer such as base/real_dlsym.c's cg_real_dlsym, called through it, or
  any shared state), and an include (`#include "x.h"` of one of the tree's
  headers).
- A hand-written `extern` of a function or variable another file defines is
  allowed only in a header on the defining file's floor: a copy elsewhere
  hides the arrow from the reader (the check still sees the use).
- A call made from an inline function in a header is the header's room's
  own (its .c file's), read from the header's text: compiled into its
  callers, it is not where the relocations put it.
- The file-level graph of uses has no loop, direct (a calls b, b calls a)
  or through others, on one floor either; nor has the graph of includes
  between rooms (a room: x.c with its x.h).

Taking a function's address (the wrapper table, a thunk handed down) is not
a use and is not counted. The floors are read from the README's table, so
the document and the check cannot disagree.

Usage: check_calls.py BUILD_DIR SOURCE_DIR [--objects GLOB] [--expect FROM TO]
(the objects are in BUILD_DIR's GLOB folders, *.p unless told; FROM -> TO is
a use the check must find, else its reading is broken; the shim's guard.c ->
live_captures.c unless told)
"""
import glob
import os
import re
import subprocess
import sys

# A call or a tail jump; PIC code (gcc and clang alike) calls every function
# of another file through these. An address taken (lea: R_X86_64_PC32) is not a call.
CALL_RELOCS = {"R_X86_64_PLT32", "R_AARCH64_CALL26", "R_AARCH64_JUMP26"}
SOURCE_EXTS = (".c", ".h", ".S")


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def read_floors(src):
    """{folder: floor number} from README.md's floors table: | N | `folder/` | ... |"""
    floors = {}
    in_table = False
    with open(os.path.join(src, "README.md")) as f:
        for line in f:
            if line.startswith("## "):
                in_table = line.strip() == "## The floors"
                continue
            m = re.match(r"\|\s*(\d+)\s*\|\s*`([^`]*)`", line) if in_table else None
            if m:
                folder = m.group(2).rstrip("/")
                top = os.path.basename(os.path.normpath(src))  # shim/, tools/: the top floor
                floors["" if folder in (".", top) else folder] = int(m.group(1))
    return floors


def sources(src):
    """Every shim source, as its path relative to shim/."""
    out = []
    for root, _, names in os.walk(src):
        for n in names:
            if n.endswith(SOURCE_EXTS):
                out.append(os.path.relpath(os.path.join(root, n), src))
    return sorted(out)


def room(rel):
    return os.path.splitext(rel)[0]


def loops_of(edges):
    """Tarjan's strongly connected components: each with two or more nodes is a loop."""
    index, low, stack, on, loops = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                loops.append(sorted(comp))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return loops


def parse_args(argv):
    if len(argv) < 3:
        sys.exit("usage: check_calls.py BUILD_DIR SOURCE_DIR [--objects GLOB] [--expect FROM TO]")
    opts = {"build": argv[1], "src": argv[2], "objects": "*.p",
            "expect": ("decide/guard/guard.c", "model/live_captures.c")}
    rest = argv[3:]
    while rest:
        if rest[0] == "--objects" and len(rest) >= 2:
            opts["objects"], rest = rest[1], rest[2:]
        elif rest[0] == "--expect" and len(rest) >= 3:
            opts["expect"], rest = (rest[1], rest[2]), rest[3:]
        else:
            sys.exit(f"check_calls.py: unknown argument {rest[0]!r}")
    return opts


def inline_bodies(text):
    """The bodies of a header's inline functions, comments and strings blanked."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\])*\"", " ", text, flags=re.S)
    bodies = []
    for m in re.finditer(r"\binline\b[^;{]*\)\s*(?:__attribute__\s*\(\([^;{]*\)\)\s*)?\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        bodies.append(text[m.end():i - 1])
    return bodies


EXTERN = re.compile(r"^\s*extern\b(?!\s*\"C\")([^;]*);")


def extern_names(line):
    """The identifiers an extern declaration names (a function pointer's inside (*name))."""
    m = EXTERN.match(line)
    return re.findall(r"[A-Za-z_]\w*", m.group(1)) if m else []


def main():
    opts = parse_args(sys.argv)
    build, src = opts["build"], opts["src"]
    readme = os.path.join(os.path.basename(os.path.normpath(src)), "README.md")
    floors = read_floors(src)
    if len(floors) < 3:
        print(f"{readme}: no floors table under '## The floors' ({floors})")
        return 1
    srcs = sources(src)
    failures = []

    def floor_of(rel):
        """The floor of the folder rel is in, or of the nearest folder above
        it that is a floor's (a floor's rooms are its subfolders)."""
        d = os.path.dirname(rel)
        while d and d not in floors:
            d = os.path.dirname(d)
            if not d:
                return None  # only the tree's own folder is the top floor, not what is below it
        return floors.get(d)

    for s in srcs:
        if floor_of(s) is None:
            failures.append(f"{s}: in no floor's folder ({readme}, The floors)")
    # Headers are included by name (every floor's folder is on the include path).
    headers = {}
    for s in srcs:
        if s.endswith(".h"):
            if os.path.basename(s) in headers:
                failures.append(f"two headers named {os.path.basename(s)}: {headers[os.path.basename(s)]}, {s}")
            headers[os.path.basename(s)] = s

    # Objects: meson names one after its source's path, '/' made '_'.
    by_object = {s.replace("/", "_") + ".o": s for s in srcs}
    objs = sorted(glob.glob(os.path.join(build, opts["objects"], "*.o")))
    if len(objs) < 10:
        print(f"only {len(objs)} objects under {build}/{opts['objects']}: not this tree's build")
        return 1
    file_of = {}
    for o in objs:
        name = os.path.basename(o)
        if name not in by_object:
            print(f"{o}: no source of that name under {src}")
            return 1
        file_of[o] = by_object[name]

    defined = {}  # function symbol -> file defining it
    variables = {}  # global variable (a function pointer among them) -> file defining it
    for o in objs:
        for line in run("nm", "--defined-only", o).splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in ("T", "W"):
                defined[parts[2]] = file_of[o]
            elif len(parts) == 3 and parts[1] in ("D", "B", "R", "V"):
                variables[parts[2]] = file_of[o]
    edges = {}
    for o in objs:
        me = file_of[o]
        section = ""
        for line in run("readelf", "-rW", o).splitlines():
            if line.startswith("Relocation section"):
                section = line.split("'")[1]
                continue
            if not section.startswith(".rela.text"):
                continue  # data relocations: tables of addresses, not calls
            parts = line.split()
            if len(parts) < 5:
                continue
            sym = parts[4].split("@")[0]
            # A call of a function, or any use of a variable from code (a
            # pointer read to call through it, state read or written).
            other = defined.get(sym) if parts[2] in CALL_RELOCS else None
            if sym in variables:
                other, sym = variables[sym], sym + " (variable)"
            if other and other != me:
                edges.setdefault(me, {}).setdefault(other, set()).add(sym)
    # Calls made from a header's inline functions are compiled into their
    # callers' objects, where the relocations above credit them to the
    # caller: read them from the header's text, as the header's room's own
    # (its .c, or the header itself when it has none).
    n_inline_calls = 0
    for s in srcs:
        if not s.endswith(".h"):
            continue
        me = room(s) + ".c" if room(s) + ".c" in srcs else s
        with open(os.path.join(src, s)) as f:
            text = f.read()
        for body in inline_bodies(text):
            for name in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", body)):
                other = defined.get(name)
                if other and room(other) != room(s):
                    edges.setdefault(me, {}).setdefault(other, set()).add(f"{name} (from an inline in {s})")
                    n_inline_calls += 1
    n_edges = sum(len(v) for v in edges.values())
    n_variable_uses = sum(1 for v in edges.values() for syms in v.values() if any("(variable)" in x for x in syms))
    # A check that finds no calls checks nothing: a use known to be there
    # must be seen.
    want_from, want_to = opts["expect"]
    if want_to not in edges.get(want_from, {}):
        print(f"{want_from} -> {want_to} not found: the relocation reading is broken")
        return 1

    for a in sorted(edges):
        for b, syms in sorted(edges[a].items()):
            if floor_of(b) is not None and floor_of(a) is not None and floor_of(b) > floor_of(a):
                failures.append(f"use back up: {a} (floor {floor_of(a)}) -> {b} (floor {floor_of(b)}): "
                                + ", ".join(sorted(syms)))

    n_includes = 0
    room_edges = {}
    for s in srcs:
        with open(os.path.join(src, s)) as f:
            for line in f:
                for name in extern_names(line):
                    owner = defined.get(name) or variables.get(name)
                    if owner and room(owner) != room(s) and (not s.endswith(".h") or floor_of(s) != floor_of(owner)):
                        failures.append(f"hand-written extern: {s} declares {name}, which {owner} defines "
                                        f"(include the header that declares it)")
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m or m.group(1) not in headers:
                    continue  # capguard/... (detect/), or not this tree's
                n_includes += 1
                h = headers[m.group(1)]
                if room(h) != room(s):
                    room_edges.setdefault(room(s), {}).setdefault(room(h), set()).add(f"{s} includes {h}")
                if floor_of(h) is not None and floor_of(s) is not None and floor_of(h) > floor_of(s):
                    failures.append(f"include back up: {s} (floor {floor_of(s)}) includes {h} (floor {floor_of(h)})")

    for comp in loops_of(edges):
        failures.append("use loop between: " + ", ".join(comp))
        for a in comp:
            for b, syms in sorted(edges.get(a, {}).items()):
                if b in comp:
                    failures.append(f"  {a} -> {b}: {', '.join(sorted(syms))}")
    # A room is a .c and its .h: a room whose header includes another's, and
    # that one's source includes the first one's header (policy.h including
    # guard.h for a type, while guard.c includes policy.h) is a loop too.
    for comp in loops_of(room_edges):
        failures.append("include loop between: " + ", ".join(comp))
        for a in comp:
            for b, why in sorted(room_edges.get(a, {}).items()):
                if b in comp:
                    failures.append(f"  {a} -> {b}: {', '.join(sorted(why))}")
    if failures:
        print("\n".join(failures))
        return 1
    print(f"{len(set(floors.values()))} floors, {len(srcs)} sources, {n_edges} file-to-file use edges "
          f"({n_variable_uses} of them with a variable used, {n_inline_calls} calls from inlines in headers) "
          f"and {n_includes} includes, none back up, "
          f"no use or include loops, no hand-written extern")
    for a in sorted(edges):
        print(f"  {a} -> {', '.join(sorted(edges[a]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
