#!/usr/bin/env bash
# What the loader does for libcapguard.so at every process's start-up, before
# any of capguard's code runs, held to ceilings (docs/benchmarks.md, the
# start-up row): about 13 to 19 instructions a relative relocation, which a
# table of pointers costs a row (names are kept as arrays of characters or
# offsets into one block of text, shim/driver/entry_points.c,
# detect/log/log_schema.c), and a few hundred a glibc version name the shim
# needs, each checked against libc's list. The relative relocations left:
# the x86-64 fast paths' targets (route/fast_path.h), which must hold their
# C body before the constructor runs, and a handful of the toolchain's.
set -euo pipefail
lib=$1
max_relative=${2:-110}
max_versions=${3:-9}
relative=$(readelf -rW "$lib" | grep -c '_RELATIVE ' || true)
versions=$(readelf -VW "$lib" | grep -Eo 'Name: GLIBC_[0-9.]+' | sort -u | wc -l)
status=0
echo "relative relocations: $relative (at most $max_relative)"
echo "glibc version names: $versions (at most $max_versions)"
if [ "$relative" -gt "$max_relative" ]; then
  echo "FAIL: $relative relative relocations; a new table of pointers? the first places (nm -S names them):" >&2
  readelf -rW "$lib" | awk '/_RELATIVE /{ if (n++ < 20) print $1 }' >&2
  status=1
fi
if [ "$versions" -gt "$max_versions" ]; then
  echo "FAIL: $versions glibc version names needed:" >&2
  readelf -VW "$lib" | grep -Eo 'Name: GLIBC_[0-9.]+' | sort -u >&2
  status=1
fi
exit $status
