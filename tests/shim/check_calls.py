"""No call loops between the shim's files: from the shim's object files,
the file-level graph of calls (a call or tail-jump relocation in one file to
a function defined in another) must have no cycle, direct (a calls b, b
calls a) or through others. Taking a function's address (the wrapper table,
a thunk handed to guard.c) is not a call and is not counted.

Usage: check_calls.py SHIM_BUILD_DIR   (the objects are in its *.p folders)
"""
import glob
import os
import subprocess
import sys

# A call or a tail jump; PIC code (gcc and clang alike) calls every function
# of another file through these. An address taken (lea: R_X86_64_PC32) is not a call.
CALL_RELOCS = {"R_X86_64_PLT32", "R_AARCH64_CALL26", "R_AARCH64_JUMP26"}


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def file_of(obj):
    # meson names an object after its source: captures.c.o
    name = os.path.basename(obj)
    for ext in (".c.o", ".S.o"):
        if name.endswith(ext):
            return name[: -len(ext)] + ext[:2]
    return name


def main():
    objs = sorted(glob.glob(os.path.join(sys.argv[1], "*.p", "*.o")))
    if len(objs) < 10:
        print(f"only {len(objs)} objects under {sys.argv[1]}/*.p: not the shim's build")
        return 1
    defined = {}  # function symbol -> file defining it
    for o in objs:
        for line in run("nm", "--defined-only", o).splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in ("T", "W"):
                defined[parts[2]] = file_of(o)
    edges = {}
    for o in objs:
        me = file_of(o)
        section = ""
        for line in run("readelf", "-rW", o).splitlines():
            if line.startswith("Relocation section"):
                section = line.split("'")[1]
                continue
            if not section.startswith(".rela.text"):
                continue  # data relocations: tables of addresses, not calls
            parts = line.split()
            if len(parts) < 5 or parts[2] not in CALL_RELOCS:
                continue
            sym = parts[4].split("@")[0]
            other = defined.get(sym)
            if other and other != me:
                edges.setdefault(me, {}).setdefault(other, set()).add(sym)
    n_edges = sum(len(v) for v in edges.values())
    # A check that finds no calls checks nothing: the guard's calls into the
    # capture bookkeeping must be seen.
    if "captures.c" not in edges.get("guard.c", {}):
        print("guard.c -> captures.c not found: the relocation reading is broken")
        return 1

    # Tarjan's strongly connected components: any with two or more files is a loop.
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

    files = sorted({file_of(o) for o in objs})
    for f in files:
        if f not in index:
            visit(f)
    if loops:
        for comp in loops:
            print("call loop between: " + ", ".join(comp))
            for a in comp:
                for b, syms in sorted(edges.get(a, {}).items()):
                    if b in comp:
                        print(f"  {a} -> {b}: {', '.join(sorted(syms))}")
        return 1
    print(f"{len(files)} files, {n_edges} file-to-file call edges, no loops")
    for a in sorted(edges):
        print(f"  {a} -> {', '.join(sorted(edges[a]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
