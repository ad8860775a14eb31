#!/usr/bin/env bash
# libcapguard.so must export exactly the entry points it interposes (the
# version script's list) and depend on nothing but glibc.
set -euo pipefail
lib=$1 map=$2
want=$(sed -n 's/^ *\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$map" | sort)
got=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWiV]$/ {print $3}' | sed 's/@.*//' | sort)
if [ "$want" != "$got" ]; then
  echo "exports differ from $map:"; diff <(echo "$want") <(echo "$got") || true; exit 1
fi
echo "exports: $(echo "$got" | wc -l) symbols, exactly the version script's list"
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
