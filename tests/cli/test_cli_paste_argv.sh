#!/usr/bin/env bash
# The commands capguard prints to paste give back the command's words
# exactly: a word with a newline, a tab, a quote, a dollar sign, a backquote
# and a control character is printed as bash's $'...' (one line, no control
# character in it), and pasted into bash it arrives byte for byte. Before, a
# newline or tab was printed as '?', so the pasted command named another
# file. Over the fake driver, with the real shim.
. "$(dirname "$0")/lib.sh"
use_real_shim
dir="$WORK/new"$'\n'"line"$'\t'"tab it's \$HOME \`id\` "$'\x01'" é"
mkdir "$dir" && cp "$CUBIN" "$dir/k.cubin"
"$CAPGUARD" run -q --emulate-driver 12020 --log "$WORK/l.jsonl" --prime "$WORK/p.cgp" -- \
  "$DYING_HOST" kill "$dir/k.cubin" cg_test_fill >/dev/null 2>"$WORK/run.err"
printf '%s\0' "$DYING_HOST" kill "$dir/k.cubin" cg_test_fill >"$WORK/want"
# each command the summary gives (an indented line that runs capguard), pasted
# into bash with capguard a function that keeps the words after --
grep -E '^    capguard ' "$WORK/run.err" >"$WORK/commands"
n=$(wc -l <"$WORK/commands")
[ "$n" -ge 3 ] && pass || fail "the summary gave $n commands to paste, wanted the next run, prime learn, prime check and --rescue:
$(cat "$WORK/run.err")"
expect_in "$WORK/run.err" "capguard: next: run it again;" "the summary's next: step"
i=0
while IFS= read -r cmd; do
  i=$((i + 1))
  if printf '%s' "$cmd" | grep -q '[[:cntrl:]]'; then fail "command $i holds a control character: $cmd"; continue; fi
  {
    echo 'capguard() { while [ "$1" != -- ]; do shift; done; shift; printf "%s\0" "$@" >"$GOT"; }'
    printf '%s\n' "$cmd"
  } >"$WORK/paste.sh"
  rm -f "$WORK/got"
  GOT=$WORK/got bash "$WORK/paste.sh" 2>"$WORK/paste.err"
  if cmp -s "$WORK/want" "$WORK/got"; then pass; else
    fail "command $i pasted into bash gave other words: $cmd
    got: $(tr '\0' '|' <"$WORK/got" 2>/dev/null | cat -A) $(cat "$WORK/paste.err")"
  fi
done <"$WORK/commands"
finish
