#!/usr/bin/env bash
# Installs what building and testing capguard needs, from Debian's packages.
# Used by .ci/run and by the demo; does nothing when everything is there.
# g++: libstdc++ for __cxa_demangle, libdw-dev: elfutils for file:line (the
# capguard command shows native frames demangled, with their source line).
# python3-mesonpy, python3-venv: the wheel (`pip wheel --no-build-isolation .`,
# offline) and the venv CI installs it in; libdw-dev, libjansson-dev and
# liblzma-dev, libbz2-dev, zlib1g-dev hold the static libraries the wheel's
# command is linked with. prometheus (promtool) and prometheus-node-exporter:
# the metrics files are checked with the real parts (test_cli_metrics_exporter.sh).
# valgrind: callgrind counts the instructions capguard adds to each call
# (bench/instr_budget.py, a test). strace: the races test counts the
# membarrier system calls a capture's begin makes (tests/routes/test_races.py).
set -euo pipefail
packages=(meson ninja-build pkg-config gcc g++ libdw-dev clang libclang-rt-14-dev check uthash-dev libxxhash-dev zstd libzstd-dev
          libjansson-dev binutils python3 python3-mesonpy python3-venv python3-pip
          skopeo docker-registry
          liblzma-dev libbz2-dev zlib1g-dev prometheus prometheus-node-exporter valgrind strace)
[ "${1:-}" = "--with-chromium" ] && packages+=(chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
echo "capguard: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
