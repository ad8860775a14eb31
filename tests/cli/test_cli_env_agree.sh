#!/usr/bin/env bash
# Every CAPGUARD_* value is checked the same way by the shim, capguard run
# and capguard doctor: the variables the shim reads (shim/base/config.c) are
# the rows of the command's table (tools/base/env_table.c), and for each value
# below the shim warns, run refuses (exit 2, one line) and doctor says a
# problem, or none of the three does. An emulated driver newer than the real
# one is said once. Over the fake driver, with the real shim.
. "$(dirname "$0")/lib.sh"
use_real_shim

# --- the same variables
# (every variable the shim reads, wherever: the hang watch reads its own; the
# *_WARNED ones are the shim's notes to its children, never a setting)
shim_vars=$(grep -rho 'getenv("CAPGUARD_[A-Z_]*")\|"CAPGUARD_[A-Z_]*"' "$SOURCE_ROOT/shim/base/config.c" "$SOURCE_ROOT/shim/decide" \
  | grep -o 'CAPGUARD_[A-Z_]*' | grep -v '_WARNED$' | sort -u)
table_vars=$(sed -n '/cg_env_vars\[\] = {/,/^};/p' "$SOURCE_ROOT/tools/base/env_table.c" | grep -o '"CAPGUARD_[A-Z_]*"' | tr -d '"' | sort -u)
[ -n "$shim_vars" ] && [ "$shim_vars" = "$table_vars" ] && pass \
  || fail "the shim reads [$(echo $shim_vars)], the command's table has [$(echo $table_vars)]"

# --- the same verdicts
agree() { # agree VAR VALUE
  local var=$1 value=$2 shim=0 run=0 doctor=0
  env "$var=$value" LD_PRELOAD="$REAL_SHIM" true 2>"$WORK/shim.err"
  grep -q "^capguard: .*$var=\|^capguard: .*log name" "$WORK/shim.err" && shim=1
  env "$var=$value" "$CAPGUARD" run -- true >/dev/null 2>"$WORK/run.err"; rc=$?
  [ "$rc" -eq 2 ] && run=1
  env "$var=$value" "$CAPGUARD" doctor >"$WORK/doctor.out" 2>&1
  grep -q "PROBLEM environment: $var=" "$WORK/doctor.out" && doctor=1
  if [ "$shim$run$doctor" = 000 ] || [ "$shim$run$doctor" = 111 ]; then pass; else
    fail "$var='$value': shim warns $shim, run refuses $run (exit $rc), doctor says a problem $doctor"
    sed 's/^/    shim | /' "$WORK/shim.err" >&2; sed 's/^/    run  | /' "$WORK/run.err" >&2
  fi
  if [ "$run" = 1 ]; then # one line, naming the variable
    [ "$(wc -l <"$WORK/run.err")" -eq 1 ] && grep -q "^capguard run: $var=" "$WORK/run.err" && pass \
      || fail "$var='$value': run's refusal is not one line naming it: $(cat "$WORK/run.err")"
  fi
}
for v in guard report off gaurd Guard; do agree CAPGUARD_MODE "$v"; done
for v in 12020 13000 abc 12.2 1202 120200 12021 8000; do agree CAPGUARD_EMULATE_DRIVER "$v"; done
for v in 256M 1G 4096 abc 10X; do agree CAPGUARD_PRIME_MAX "$v"; done
for var in CAPGUARD_RESCUE CAPGUARD_PRIME_READONLY CAPGUARD_QUIET CAPGUARD_SUMMARY; do
  for v in 1 0 yes off true maybe 2; do agree "$var" "$v"; done
done
for v in 5 86400 0 x 5s -1 86401 " 5" "+5"; do agree CAPGUARD_HANG_S "$v"; done
for v in "$WORK/l.jsonl" "$WORK/z%%.jsonl" "$WORK/l.%p.jsonl" "$WORK/a%x.jsonl" "$WORK/q%q.jsonl" "$WORK/e%"; do
  agree CAPGUARD_LOG "$v"
done
# the two the issue named, in words
CAPGUARD_EMULATE_DRIVER=abc run_cg abc run -- true
expect_rc 2 "CAPGUARD_EMULATE_DRIVER=abc"
expect_in "$WORK/abc.err" "capguard run: CAPGUARD_EMULATE_DRIVER=abc is not a driver version like 12020 (12.2); unset it or pass --emulate-driver" "its line"
CAPGUARD_MODE=gaurd run_cg gaurd doctor
expect_rc 1 "doctor with CAPGUARD_MODE=gaurd"
expect_in "$WORK/gaurd.out" "PROBLEM environment: CAPGUARD_MODE=gaurd is not a mode: guard, report or off" "doctor says it"

# --- emulating a driver newer than the real one: said once
FAKECUDA_DRIVER_VERSION=12020 run_cg newer run -q --emulate-driver 13000 --log "$WORK/newer.jsonl" --prime "$WORK/newer.cgp" -- \
  "$VLLM_LIKE" --workers 2 "$CUBIN" cg_test_fill
[ "$(grep -c "newer than this driver" "$WORK/newer.err")" -eq 1 ] && pass \
  || fail "an emulated driver newer than the real one is not said once: $(grep -c "newer than this driver" "$WORK/newer.err") times"
expect_in "$WORK/newer.err" "capguard: --emulate-driver 13000 is newer than this driver (12020)" "the summary says it"
FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_EMULATE_DRIVER=13000 LD_PRELOAD="$REAL_SHIM" "$DYING_HOST" alloc "$CUBIN" cg_test_fill 2>"$WORK/newer-shim.err" >/dev/null
[ "$(grep -c "CAPGUARD_EMULATE_DRIVER=13000 is newer than this driver (12020)" "$WORK/newer-shim.err")" -eq 1 ] && pass \
  || fail "the shim alone does not say it once: $(cat "$WORK/newer-shim.err")"
FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_EMULATE_DRIVER=13000 run_cg newer-doctor doctor
expect_in "$WORK/newer-doctor.out" "note    CAPGUARD_EMULATE_DRIVER: 13000 is newer than this driver (12020)" "doctor says it"
finish
