#!/usr/bin/env bash
# check_wheel.sh WHEEL: does the capguard wheel keep its tag's promise?
#   - named and tagged py3-none-manylinux_2_34_x86_64 (file name and WHEEL);
#   - holds the command, its self-test, the shim and the launcher modules;
#   - every ELF file in it asks for GLIBC_2.34 at most (objdump -T);
#   - every ELF file needs only glibc's own libraries, all found (ldd).
# Independent of python/wheel_tag.py, which makes the same checks when the
# wheel is built: this one reads the finished wheel with other tools.
# Prints one line per problem and exits 1, or prints what it checked.
set -u
whl=$1
problems=0
bad() { echo "check_wheel: $*"; problems=$((problems + 1)); }
[ -f "$whl" ] || { echo "check_wheel: $whl: no such file"; exit 2; }
case $(basename "$whl") in
  capguard-*-py3-none-manylinux_2_34_x86_64.whl) ;;
  *) bad "$(basename "$whl"): not named capguard-VERSION-py3-none-manylinux_2_34_x86_64.whl" ;;
esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/capguard-wheel.XXXXXX")
trap 'rm -rf "$dir"' EXIT
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$dir" ||
  { echo "check_wheel: $whl: not a zip file"; exit 1; }
grep -qx 'Tag: py3-none-manylinux_2_34_x86_64' "$dir"/*.dist-info/WHEEL ||
  bad "WHEEL does not say Tag: py3-none-manylinux_2_34_x86_64"
# the man page (--help: man ...) and the docs the command cites (report --help: trace.md)
for f in capguard/bin/capguard capguard/bin/capguard-selftest capguard/lib/libcapguard.so \
         capguard/__init__.py capguard/__main__.py capguard/share/man/man1/capguard.1 \
         capguard/share/doc/capguard/trace.md capguard/share/doc/capguard/log-format.md \
         capguard/share/doc/capguard/priming-format.md capguard/share/bash-completion/completions/capguard; do
  [ -f "$dir/$f" ] || bad "$f missing"
done
grep -qx 'capguard = capguard:main' "$dir"/*.dist-info/entry_points.txt 2>/dev/null ||
  bad "no capguard console script in entry_points.txt"
elves=0
allowed='^(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|/lib64/ld-linux-x86-64\.so\.2)$'
while IFS= read -r -d '' f; do
  [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  elves=$((elves + 1))
  rel=${f#"$dir"/}
  # symbol versions above GLIBC_2.34, each with the symbol that asks for it
  while read -r ver sym; do
    bad "$rel: $sym needs $ver (the tag allows GLIBC_2.34 at most)"
  done < <(objdump -T "$f" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\(?GLIBC_[0-9.]+\)?$/) { v = $i; gsub(/[()]/, "", v); print v, $NF } }' |
           awk '{ split(substr($1, 7), n, "."); if (n[1] > 2 || (n[1] == 2 && n[2] > 34)) print }' | sort -u)
  # libraries: glibc's own only, and every one found
  while read -r lib rest; do
    [ -n "$lib" ] || continue
    if [[ $rest == *"not found"* ]]; then bad "$rel: needs $lib, not found"
    elif ! [[ $lib =~ $allowed ]]; then bad "$rel: needs $lib, which a clean image lacks"; fi
  done < <(ldd "$f" 2>&1 | sed -n 's/^[[:space:]]*\([^[:space:]]*\)\(.*\)$/\1 \2/p' | grep -v 'statically linked')
done < <(find "$dir" -type f -print0)
[ "$elves" -ge 3 ] || bad "only $elves ELF files (the command, its self-test and the shim at least)"
if [ "$problems" -ne 0 ]; then echo "check_wheel: $problems problem(s) in $(basename "$whl")"; exit 1; fi
echo "check_wheel: $(basename "$whl"): $elves ELF files, GLIBC_2.34 at most, glibc's libraries only"
