#!/usr/bin/env bash
# bash completion (tools/completion/capguard.bash): the commands, every option
# of each command's usage line, prime's subcommands, files after --prime; and
# meson install puts it where bash-completion looks
# (share/bash-completion/completions/capguard).
. "$(dirname "$0")/lib.sh"
comp=$SOURCE_ROOT/tools/completion/capguard.bash
[ -f "$comp" ] && pass || { fail "no $comp"; finish; }
# complete WORDS...: what the function offers for the last word
complete_words() {
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _capguard; printf "%s\n" "${COMPREPLY[@]}"' \
    bash "$comp" "$@"
}
complete_words capguard "" >"$WORK/top"
for c in run report doctor prime; do expect_in "$WORK/top" "$c" "the command $c"; done
for c in run report doctor "prime learn" "prime check"; do
  # shellcheck disable=SC2086
  complete_words capguard $c "-" >"$WORK/opts"
  # shellcheck disable=SC2086
  for opt in $("$CAPGUARD" $c --help | head -1 | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
    grep -qxF -- "$opt" "$WORK/opts" && pass || fail "completion of capguard $c lacks $opt"
  done
done
complete_words capguard prime "" >"$WORK/prime"
for s in list show verify prune merge rm learn check; do expect_in "$WORK/prime" "$s" "prime $s"; done
touch "$WORK/fleet.cgp"
complete_words capguard run --prime "$WORK/fle" >"$WORK/file"
expect_in "$WORK/file" "$WORK/fleet.cgp" "a file after --prime"
complete_words capguard run --mode "" >"$WORK/modes"
expect_in "$WORK/modes" "report" "--mode's words"
# meson install puts it where bash-completion finds it
meson install -C "$BUILD_ROOT" --no-rebuild --destdir "$WORK/dest" >"$WORK/install.log" 2>&1 || fail "meson install: $(tail -5 "$WORK/install.log")"
installed=$(find "$WORK/dest" -path '*/share/bash-completion/completions/capguard' | head -1)
[ -n "$installed" ] && cmp -s "$installed" "$comp" && pass || fail "meson install did not put the completion in share/bash-completion/completions"
finish
