#!/usr/bin/env bash
# Installs what building and testing capguard needs, from Debian's packages.
# Used by .ci/run and by the demo; does nothing when everything is there.
#   install-deps.sh                  building and every test (CI)
#   install-deps.sh --with-chromium  and the HTML page's render test
#   install-deps.sh --demo           building only: what tools/demo/run-demo.sh needs
#   install-deps.sh --print [...]    the packages it would want, one a line; installs nothing
# g++: libstdc++ for __cxa_demangle, libdw-dev: elfutils for file:line (the
# capguard command shows native frames demangled, with their source line).
# check, uthash-dev, libxxhash-dev, zstd, libzstd-dev, libjansson-dev: the
# build's own (the tests are built with it). For the tests alone:
# python3-mesonpy, python3-venv: the wheel (`pip wheel --no-build-isolation .`,
# offline) and the venv CI installs it in; liblzma-dev, libbz2-dev, zlib1g-dev
# hold the static libraries the wheel's command is linked with. prometheus
# (promtool) and prometheus-node-exporter: the metrics files are checked with
# the real parts (test_cli_metrics_exporter.sh, test_cli_metrics_alert.sh).
# valgrind: callgrind counts the instructions capguard adds to each call
# (bench/instr_budget.py, a test). strace: the races test counts the
# membarrier system calls a capture's begin makes (tests/routes/test_races.py).
# clang, libclang-rt-14-dev: the sanitized build (build-san). clang-format:
# the house test of the code's format (tests/house/check_format.py).
# cuda.h, the CUDA driver API header, comes from the CUDA toolkit, which
# Debian's main archive does not have: when no cuda.h is found where meson
# looks (meson.build), this stops at once and says the one command that gets it.
set -euo pipefail
build=(meson ninja-build pkg-config gcc g++ libdw-dev check uthash-dev libxxhash-dev zstd libzstd-dev
       libjansson-dev binutils python3)
tests=(clang libclang-rt-14-dev python3-mesonpy python3-venv python3-pip liblzma-dev libbz2-dev zlib1g-dev
       prometheus prometheus-node-exporter valgrind strace skopeo docker-registry clang-format)
demo=false print=false chromium=false
for a in "$@"; do
  case $a in
    --demo) demo=true ;;
    --print) print=true ;;
    --with-chromium) chromium=true ;;
    *) echo "usage: install-deps.sh [--demo] [--with-chromium] [--print]" >&2; exit 2 ;;
  esac
done
packages=("${build[@]}")
$demo || packages+=("${tests[@]}")
$chromium && packages+=(chromium)
if $print; then printf '%s\n' "${packages[@]}"; exit 0; fi

# cuda.h where meson.build looks for it (the toolkit's CUDA_PATH/CUDA_HOME/CUDA_ROOT, then these)
cuda_h=false
for d in "${CUDA_PATH:-}" "${CUDA_HOME:-}" "${CUDA_ROOT:-}"; do
  [ -n "$d" ] && [ -f "$d/include/cuda.h" ] && cuda_h=true
done
for d in /usr/local/cuda/include /opt/cuda/include /usr/include; do [ -f "$d/cuda.h" ] && cuda_h=true; done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
if ! $cuda_h; then
  echo "capguard: cuda.h (the CUDA driver API header) is not installed, and building needs it; get it with" >&2
  echo "  ${sudo:+sudo }apt-get install nvidia-cuda-dev   # Debian: the non-free component; Ubuntu: multiverse" >&2
  echo "or install NVIDIA's CUDA toolkit (/usr/local/cuda), or pass meson -Dtoolkit_include=DIR, then run this again" >&2
  exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "capguard: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
