#!/usr/bin/env bash
# docs/capguard.1 covers every command and variable, and formats without warnings.
. "$(dirname "$0")/lib.sh"
man=$MANPAGE
# the source with troff's \- (a real hyphen-minus) as plain -, to search
sed 's/\\-/-/g' "$man" >"$WORK/plain"
for word in "capguard run" "capguard report" "capguard doctor" "capguard prime" \
            CAPGUARD_MODE CAPGUARD_LOG CAPGUARD_PRIME CAPGUARD_EMULATE_DRIVER CAPGUARD_RESCUE \
            CAPGUARD_SHIM CAPGUARD_LIBCUDA NO_COLOR --emulate-driver --rescue --json --html \
            CAPGUARD_QUIET CAPGUARD_PRIME_MAX CAPGUARD_SUMMARY CAPGUARD_RUN --trace --all \
            --error-exitcode "not a capguard log" log-format.md \
            "EXIT STATUS" capguard-selftest; do
  grep -qF -- "$word" "$WORK/plain" && pass || fail "man page does not mention $word"
done
# every driver call the shim watches is named (its base name, without _v2/_ptsz/_ptds):
# the rows of shim/driver/entry_point_rows.h; the copies and memsets as families
rows=$SOURCE_ROOT/shim/driver/entry_point_rows.h
grep -oE "X\((LOAD|BREAKER|DEFERRABLE|EVENT_RECORD|STREAM_WORK), *cu[A-Za-z0-9_]+" "$rows" \
  | sed -E 's/.*, *//; s/(_v[0-9]+|_ptsz|_ptds)+$//; s/^cuMemcpy.*/cuMemcpy*/; s/^cuMemset.*/cuMemset*/' \
  | sort -u >"$WORK/watched"
[ "$(wc -l <"$WORK/watched")" -ge 30 ] && pass || fail "few watched calls read from $rows: $(cat "$WORK/watched")"
sed -n '/^\.SH WATCHED CALLS/,/^\.SH /p' "$WORK/plain" >"$WORK/watched-section"
while read -r call; do
  grep -qF -- "$call" "$WORK/watched-section" && pass || fail "man page's WATCHED CALLS lacks $call"
done <"$WORK/watched"
# what guard mode does with an event query
expect_in "$WORK/watched-section" "answered" "man page: what capguard answers for cuEventQuery"
for v in CAPGUARD_PRIME_OPTION CAPGUARD_PRIME_SAID "--dry-run" "copies (how many the next run preloads"; do
  grep -qF -- "$v" "$WORK/plain" && pass || fail "man page does not mention $v"
done
# every long option the commands' --help lists appears in the man page
for c in run report; do
  for opt in $("$CAPGUARD" "$c" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
    grep -qF -- "$opt" "$WORK/plain" && pass || fail "man page lacks $c $opt"
  done
done
# the SYNOPSIS lists every flag of each command's usage line
sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$WORK/plain" >"$WORK/synopsis"
for c in run report doctor "prime learn" "prime check"; do
  # shellcheck disable=SC2086
  for opt in $("$CAPGUARD" $c --help | head -1 | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
    grep -qF -- "$opt" "$WORK/synopsis" && pass || fail "the man page's SYNOPSIS lacks $c $opt"
  done
  grep -qF -- "capguard $c" "$WORK/synopsis" && pass || fail "the man page's SYNOPSIS lacks capguard $c"
done
grep -qF -- "--hang" "$WORK/synopsis" && pass || fail "the SYNOPSIS lacks run --hang"
# run --help names the variables a user sets by hand
"$CAPGUARD" run --help >"$WORK/run-help"
for v in CAPGUARD_QUIET CAPGUARD_PRIME_MAX CAPGUARD_SUMMARY CAPGUARD_SHIM CAPGUARD_HANG_S; do
  expect_in "$WORK/run-help" "$v" "run --help names $v"
done
# the formats the man page refers to are installed (meson install_data)
grep -q "log-format.md" "$SOURCE_ROOT/tools/meson.build" && pass || fail "log-format.md is not installed"
if ! command -v groff >/dev/null; then
  echo "SKIP: groff not installed - formatting of the man page not checked"; finish
fi
groff -man -Tutf8 -ww -z "$man" >"$WORK/groff.err" 2>&1
[ -s "$WORK/groff.err" ] && fail "groff warnings: $(cat "$WORK/groff.err")" || pass
groff -man -Tutf8 "$man" 2>/dev/null | grep -q "capguard run" && pass || fail "man page renders empty"
finish
