#!/usr/bin/env bash
# docs/reports.md's and README.md's examples of capguard run's summary are today's output: the
# command it names is run here, as it says (vllm_like and its cubin in the
# working folder, HOME shown as /home/u), over the fake 12.2 driver, and both
# are compared line by line once pids, addresses, streams, source lines and
# the temporary log's name are set aside, and the capture line's times. The broken: lines name the first
# three of four workers in the order their captures began, which differs from
# run to run: each is checked for today's form instead.
. "$(dirname "$0")/lib.sh"
use_real_shim
export FAKECUDA_DRIVER_VERSION=12020
doc=$SOURCE_ROOT/docs/reports.md
mkdir -p "$WORK/run" "$WORK/home"
cp "$VLLM_LIKE" "$WORK/run/vllm_like"
cp "$CUBIN" "$WORK/run/kernels_sm90.cubin"
(cd "$WORK/run" && export HOME=$WORK/home && unset XDG_CACHE_HOME &&
 "$CAPGUARD" run -q -- ./vllm_like kernels_sm90.cubin cg_test_fill >/dev/null 2>"$WORK/run.err")
# Which worker's capture broke first differs from run to run too (a
# sanitized build's timing makes it another one), and two of the four load
# with cuModuleLoadDataEx: the call is read as the one it is, a module load.
normalise() {
  sed -E "s|$WORK/home|/home/u|g; s/cuModuleLoadDataEx/cuModuleLoadData/g; s/pid [0-9]+/pid N/g; s/thread [0-9]+/thread N/g; s/0x[0-9a-f]{6,}/0xS/g;
          s/\+0x[0-9a-f]+/+0xA/g; s/\.c:[0-9]+/.c:L/g; s/capguard-[A-Za-z0-9]{6}\.jsonl/capguard-X.jsonl/g
          /^capguard: capture:/ s/[0-9][0-9.,]* (ns|us|ms|s)\b/T/g"
}
grep -E '^(capguard|  )' "$WORK/run.err" | normalise >"$WORK/now"
# the example: the block that starts with the run's first summary line
awk '/^```/ { if (inblock) exit; if (getline line > 0 && line ~ /^capguard: 4 processes used CUDA/) { inblock = 1; print line }; next } inblock' "$doc" \
  | normalise >"$WORK/doc"
[ -s "$WORK/doc" ] && pass || fail "no example of capguard run's summary in $doc"
grep -v '^capguard: broken: pid' "$WORK/now" >"$WORK/now-rest"
grep -v '^capguard: broken: pid' "$WORK/doc" >"$WORK/doc-rest"
if diff "$WORK/doc-rest" "$WORK/now-rest" >"$WORK/diff"; then pass; else
  fail "docs/reports.md's example is not today's output (regenerate it as its note says):"; sed 's/^/    | /' "$WORK/diff" >&2; fi
n=$(grep -c '^capguard: broken: pid' "$WORK/doc")
[ "$n" -eq 3 ] && pass || fail "the example shows $n broken: lines, today's summary 3"
while read -r line; do
  grep -qxF -- "$line" <(grep '^capguard: broken: pid' "$WORK/now"; sed 's/cuModuleLoadData at/cuModuleLoadDataEx at/' <(grep '^capguard: broken: pid' "$WORK/now"); sed 's/cuModuleLoadDataEx at/cuModuleLoadData at/' <(grep '^capguard: broken: pid' "$WORK/now")) \
    && pass || fail "the example's broken: line is not in today's form: $line"
done < <(grep '^capguard: broken: pid' "$WORK/doc")
# README's example: the same summary, its first broken: line in today's form
# and the others said in one line ("capguard: broken: ... (two more ...")
awk '/^## What a run says/ { sect = 1 } sect && /^```$/ { if (inblock) exit; inblock = 1; next } inblock' \
  "$SOURCE_ROOT/README.md" | normalise >"$WORK/readme"
[ -s "$WORK/readme" ] && pass || fail "no example of capguard run's summary in README.md"
grep -v '^capguard: broken: ' "$WORK/readme" >"$WORK/readme-rest"
grep -v '^capguard: broken: ' "$WORK/now" >"$WORK/now-rest2"
if diff "$WORK/readme-rest" "$WORK/now-rest2" >"$WORK/rdiff"; then pass; else
  fail "README.md's example is not today's output:"; sed 's/^/    | /' "$WORK/rdiff" >&2; fi
grep '^capguard: broken: pid' "$WORK/readme" >"$WORK/readme-broken"
expect_lines "$WORK/readme-broken" 1 "README.md's example: one broken: line in full"
while read -r line; do
  grep -qxF -- "$line" <(grep '^capguard: broken: pid' "$WORK/now") && pass \
    || fail "README.md's broken: line is not in today's form: $line"
done <"$WORK/readme-broken"
expect_in "$SOURCE_ROOT/README.md" "\`capguard run -q -- ./vllm_like kernels_sm90.cubin cg_test_fill\` over a 12.2" "README.md names the command of its example"
finish
