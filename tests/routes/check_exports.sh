#!/usr/bin/env bash
# libcapguard.so must export exactly the entry points it interposes -- dlsym
# and one symbol per row of shim/entry_point_rows.h, read here from the rows
# themselves -- and the version script the build made from them must list
# the same; and it must depend on nothing but glibc.
set -euo pipefail
lib=$1 map=$2 rows=$3
want=$( (echo dlsym; grep -oE '^ +X\([A-Z_]+, *[A-Za-z_][A-Za-z0-9_]*' "$rows" | sed 's/.*, *//') | sort)
[ "$(echo "$want" | wc -l)" -gt 10 ] || { echo "too few rows read from $rows"; exit 1; }
got=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWiV]$/ {print $3}' | sed 's/@.*//' | sort)
if [ "$want" != "$got" ]; then
  echo "exports differ from the rows of $rows (< rows, > exported):"; diff <(echo "$want") <(echo "$got") || true; exit 1
fi
listed=$(sed -n '/global:/,/local:/p' "$map" | tr ' ;' '\n\n' | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | grep -vx 'global\|local' | sort)
if [ "$want" != "$listed" ]; then
  echo "the version script $map differs from the rows (< rows, > script):"; diff <(echo "$want") <(echo "$listed") || true; exit 1
fi
echo "exports: $(echo "$got" | wc -l) symbols, exactly dlsym and the rows (and the version script made from them)"
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
for n in $needed; do
  case $n in
    libc.so.6|libdl.so.2|libpthread.so.0|ld-linux*) ;;
    # A sanitized build (CG_SANITIZED, set by its test setup) needs the
    # sanitizer's shared runtime and the unwinder it links.
    libclang_rt.asan-*|libasan.so*|libubsan.so*|libgcc_s.so.1) [ "${CG_SANITIZED:-}" = 1 ] || { echo "unexpected dependency: $n"; exit 1; } ;;
    *) echo "unexpected dependency: $n"; exit 1;;
  esac
done
echo "dependencies: $needed"
