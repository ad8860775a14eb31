#!/usr/bin/env bash
# capguard run's options are one table (tools/cmd/run_options.c): its usage
# line, its --help, its parser and the variables it sets come from the rows.
# What cannot be made from them is held to them here: the man page's
# synopsis and the README's list exactly the usage line's options, in its
# order, and the man page describes each; the completion offers exactly them (and -q, --help,
# --); and an option that sets a variable is the one a bad value of that
# variable names (the environment table, tools/base/env_table.c, checks it).
. "$(dirname "$0")/lib.sh"
"$CAPGUARD" run --help >"$WORK/help" 2>&1
usage=$(head -1 "$WORK/help" | grep -oE -- '--[a-z][a-z-]+' | grep -vx -- '--')
[ "$(echo "$usage" | wc -l)" -ge 10 ] && pass || fail "few options in run's usage line: $usage"
# the man page: its synopsis of capguard run, in order, and a description of each
sed 's/\\-/-/g' "$MANPAGE" >"$WORK/plain"
sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$WORK/plain" | sed -n '/^\.B capguard run$/,/^\.br$/p' | grep -oE -- '--[a-z][a-z-]+' >"$WORK/synopsis"
[ "$(cat "$WORK/synopsis")" = "$usage" ] && pass ||
  fail "the man page's synopsis of capguard run differs from its usage line:$(diff <(echo "$usage") "$WORK/synopsis")"
sed -n '/^\.SS capguard run/,/^\.SS /p' "$WORK/plain" >"$WORK/run-section"
for opt in $usage; do
  grep -qE -- "^\.B[IR]? $opt( |\$)" "$WORK/run-section" && pass || fail "the man page does not describe capguard run $opt"
done
# the README's synopsis of capguard run: every option, in order
grep -m1 -oE -- '^- `capguard run \[[^`]*`' "$SOURCE_ROOT/README.md" | grep -oE -- '--[a-z][a-z-]+' >"$WORK/readme"
[ "$(cat "$WORK/readme")" = "$usage" ] && pass ||
  fail "the README's capguard run line differs from its usage line:$(diff <(echo "$usage") "$WORK/readme")"
# the completion: exactly the options (-q, --help and -- besides)
words=$(sed -n 's/^ *run) opts="\(.*\)" ;;$/\1/p' "$SOURCE_ROOT/tools/completion/capguard.bash" | tr ' ' '\n' |
  grep -vxE -- '-q|--help|--' | sort)
[ "$words" = "$(echo "$usage" | sort)" ] && pass ||
  fail "the completion of capguard run differs from its usage line:$(diff <(echo "$usage" | sort) <(echo "$words"))"
# each option that names a variable in --help is what a bad value of it names
while read -r opt var; do
  case $var in CAPGUARD_MODE | CAPGUARD_EMULATE_DRIVER | CAPGUARD_RESCUE | CAPGUARD_QUIET | CAPGUARD_STALE | CAPGUARD_HANG_S) ;; *) continue ;; esac
  env "$var=not-a-value" "$CAPGUARD" run -- true >"$WORK/bad.out" 2>&1
  grep -qF -- "$var=not-a-value" "$WORK/bad.out" && grep -qF -- "or pass $opt" "$WORK/bad.out" && pass ||
    fail "a bad $var is not refused naming $opt: $(cat "$WORK/bad.out")"
  # with the option given, the option's value is what the shim gets: the
  # variable's is not refused (a bad CAPGUARD_STALE refused --stale itself)
  case $opt in --mode) given=(--mode guard) ;; --emulate-driver) given=(--emulate-driver 12020) ;;
    --hang) given=(--hang 5) ;; *) given=("$opt") ;; esac
  env "$var=not-a-value" "$CAPGUARD" run --log "$WORK/given.jsonl" "${given[@]}" -- true >"$WORK/given.out" 2>&1
  ! grep -qF -- "$var=not-a-value" "$WORK/given.out" && pass ||
    fail "capguard run ${given[*]} refused a bad $var it replaces: $(cat "$WORK/given.out")"
done < <(awk '/^  (-q, )?--[a-z]/ { opt = $1 == "-q," ? $2 : $1 } { while (match($0, /\(CAPGUARD_[A-Z_]+/)) { print opt, substr($0, RSTART + 1, RLENGTH - 1); $0 = substr($0, RSTART + RLENGTH) } }' "$WORK/help" | sort -u)
finish
