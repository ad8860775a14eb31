#!/usr/bin/env bash
# The wheel's checks can fail: check_wheel.sh and python/wheel_tag.py (the
# build's own check) refuse a wheel whose ELF files need a library beyond
# glibc (the build tree's capguard, linked with libdw and jansson) or a
# symbol version above GLIBC_2.34 (a program calling arc4random, 2.36), and
# one named or tagged otherwise; they accept glibc-only ELF files.
#   env: CAPGUARD (build tree), GLIBC_ONLY (a glibc-only program), NEW_GLIBC_PROG (empty: no such
#   program on this glibc), SOURCE_ROOT
. "$(dirname "$0")/../cli/lib.sh"
check=$SOURCE_ROOT/tests/wheel/check_wheel.sh
# mkwheel NAME TAG FILE=ARCNAME...: a wheel-shaped zip
mkwheel() {
  local name=$1 tag=$2; shift 2
  python3 - "$WORK/$name" "$tag" "$@" <<'PY'
import sys, zipfile
out, tag, *files = sys.argv[1:]
with zipfile.ZipFile(out, "w") as z:
    z.writestr("capguard-0.1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: %s\n" % tag)
    z.writestr("capguard-0.1.0.dist-info/entry_points.txt", "[console_scripts]\ncapguard = capguard:main\n")
    z.writestr("capguard/__init__.py", "")
    z.writestr("capguard/__main__.py", "")
    # the man page and the docs the command cites, as the wheel carries them
    z.writestr("capguard/share/man/man1/capguard.1", ".TH CAPGUARD 1\n")
    for doc in ("trace.md", "log-format.md", "priming-format.md"):
        z.writestr("capguard/share/doc/capguard/" + doc, "# doc\n")
    z.writestr("capguard/share/bash-completion/completions/capguard", "complete -F _capguard capguard\n")
    for spec in files:
        src, arc = spec.split("=")
        z.write(src, arc)
PY
}
good=capguard-0.1.0-py3-none-manylinux_2_34_x86_64.whl
# glibc-only ELF files in place of all three: accepted
mkwheel "$good" py3-none-manylinux_2_34_x86_64 "$GLIBC_ONLY=capguard/bin/capguard" \
  "$GLIBC_ONLY=capguard/bin/capguard-selftest" "$GLIBC_ONLY=capguard/lib/libcapguard.so"
bash "$check" "$WORK/$good" >"$WORK/good.out"; rc=$?
expect_rc 0 "a glibc-only wheel"
# the build tree's command: libdw, jansson, libstdc++
mkdir -p "$WORK/deps"
mkwheel "deps/$good" py3-none-manylinux_2_34_x86_64 "$CAPGUARD=capguard/bin/capguard" \
  "$GLIBC_ONLY=capguard/bin/capguard-selftest" "$GLIBC_ONLY=capguard/lib/libcapguard.so"
bash "$check" "$WORK/deps/$good" >"$WORK/deps.out"; rc=$?
expect_rc 1 "a command that needs libdw"
expect_in "$WORK/deps.out" "capguard/bin/capguard: needs libdw.so.1, which a clean image lacks" "libdw named"
expect_in "$WORK/deps.out" "capguard/bin/capguard: needs libjansson.so.4, which a clean image lacks" "jansson named"
# wrong name and tag, shim missing
mkwheel capguard-0.1.0-py3-none-linux_x86_64.whl py3-none-linux_x86_64 "$GLIBC_ONLY=capguard/bin/capguard" \
  "$GLIBC_ONLY=capguard/bin/capguard-selftest"
bash "$check" "$WORK/capguard-0.1.0-py3-none-linux_x86_64.whl" >"$WORK/tag.out"; rc=$?
expect_rc 1 "a linux_x86_64 wheel"
expect_in "$WORK/tag.out" "not named capguard-VERSION-py3-none-manylinux_2_34_x86_64.whl" "file name"
expect_in "$WORK/tag.out" "WHEEL does not say Tag: py3-none-manylinux_2_34_x86_64" "WHEEL tag"
expect_in "$WORK/tag.out" "capguard/lib/libcapguard.so missing" "missing shim"
# the build's own check (python/wheel_tag.py) on the same files
py_problems() { python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import wheel_tag
for p in wheel_tag.elf_problems(sys.argv[2], "x"): print(p)' "$SOURCE_ROOT/python" "$1"; }
py_problems "$CAPGUARD" >"$WORK/py-deps.out"
expect_in "$WORK/py-deps.out" "x: needs libdw.so.1, which a clean image lacks" "wheel_tag: libdw"
py_problems "$GLIBC_ONLY" >"$WORK/py-good.out"
expect_lines "$WORK/py-good.out" 0 "wheel_tag: a glibc-only program"
# retag: renames, rewrites WHEEL and RECORD (hashes pip checks), keeps modes
mkdir -p "$WORK/re"
mkwheel re/capguard-0.1.0-cp311-cp311-linux_x86_64.whl cp311-cp311-linux_x86_64 "$GLIBC_ONLY=capguard/bin/capguard" \
  "$GLIBC_ONLY=capguard/bin/capguard-selftest" "$GLIBC_ONLY=capguard/lib/libcapguard.so"
python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import wheel_tag; print(wheel_tag.retag(sys.argv[2]))' \
  "$SOURCE_ROOT/python" "$WORK/re/capguard-0.1.0-cp311-cp311-linux_x86_64.whl" >"$WORK/re.out" 2>&1
expect_in "$WORK/re.out" "$good" "retag's new name"
bash "$check" "$WORK/re/$good" >"$WORK/re-check.out"; rc=$?
expect_rc 0 "a retagged wheel passes the check"
python3 - "$WORK/re/$good" >"$WORK/record.out" <<'PY'
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
rec = {r.split(",")[0]: r.split(",")[1] for r in z.read("capguard-0.1.0.dist-info/RECORD").decode().splitlines()}
for i in z.infolist():
    if i.filename.endswith("RECORD"): continue
    h = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(z.read(i)).digest()).rstrip(b"=").decode()
    print("ok" if rec.get(i.filename) == h else "BAD " + i.filename)
    if i.filename.startswith("capguard/bin/"): print("mode", oct(i.external_attr >> 16 & 0o777))
PY
expect_not_in "$WORK/record.out" "BAD" "RECORD hashes"
expect_in "$WORK/record.out" "mode 0o755" "executable kept executable"
if [ -n "$NEW_GLIBC_PROG" ]; then
  mkdir -p "$WORK/new"
  mkwheel "new/$good" py3-none-manylinux_2_34_x86_64 "$GLIBC_ONLY=capguard/bin/capguard" \
    "$NEW_GLIBC_PROG=capguard/bin/capguard-selftest" "$GLIBC_ONLY=capguard/lib/libcapguard.so"
  bash "$check" "$WORK/new/$good" >"$WORK/new.out"; rc=$?
  expect_rc 1 "a program that needs GLIBC_2.36"
  expect_in "$WORK/new.out" "capguard/bin/capguard-selftest: arc4random needs GLIBC_2.36" "symbol and version named"
  py_problems "$NEW_GLIBC_PROG" >"$WORK/py-new.out"
  expect_in "$WORK/py-new.out" "x: arc4random needs GLIBC_2.36" "wheel_tag: GLIBC_2.36"
  mkdir -p "$WORK/re2"
  mkwheel re2/capguard-0.1.0-cp311-cp311-linux_x86_64.whl x "$NEW_GLIBC_PROG=capguard/bin/capguard"
  python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import wheel_tag; wheel_tag.retag(sys.argv[2])' \
    "$SOURCE_ROOT/python" "$WORK/re2/capguard-0.1.0-cp311-cp311-linux_x86_64.whl" >"$WORK/re2.out" 2>&1; rc=$?
  expect_rc 1 "retag refuses a program that needs GLIBC_2.36"
  expect_in "$WORK/re2.out" "not tagged manylinux_2_34_x86_64" "retag says why"
  [ -e "$WORK/re2/$good" ] && fail "retag left a tagged wheel behind" || pass
else
  echo "note: this glibc has no arc4random (before 2.36): the GLIBC_2.36 case is not checked here"
fi
finish
