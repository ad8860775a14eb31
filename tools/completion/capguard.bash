# bash completion for capguard: its commands, each command's options (as its
# usage line gives them: tests/cli/test_cli_completion.sh holds them to it),
# files where a FILE is asked for, and the program after "--".
# Installed by meson install to share/bash-completion/completions/capguard
# (found by bash-completion when the command is first completed); the wheel
# carries it as capguard/share/bash-completion/completions/capguard: source it.
_capguard() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion || return
  else
    cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
  fi
  local i cmd="" sub=""
  for ((i = 1; i < cword; i++)); do
    if [ "${words[i]}" = "--" ]; then
      # the program and its own arguments, as the shell completes them
      if declare -F _command_offset >/dev/null; then _command_offset $((i + 1)); else
        mapfile -t COMPREPLY < <(compgen -c -- "$cur"); fi
      return
    fi
    case ${words[i]} in
      -*) ;;
      *) if [ -z "$cmd" ]; then cmd=${words[i]}
         elif [ "$cmd" = prime ] && [ -z "$sub" ]; then sub=${words[i]}; fi ;;
    esac
  done
  case $prev in
    --log | --prime | --html | --trace) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
    --metrics) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
    --mode) mapfile -t COMPREPLY < <(compgen -W "guard report off" -- "$cur"); return ;;
    --emulate-driver) mapfile -t COMPREPLY < <(compgen -W "12020 12000 11080" -- "$cur"); return ;;
    --hang | --error-exitcode | --older-than | --max-size) return ;;
  esac
  local opts
  case $cmd in
    "") opts="run report doctor prime --help --version" ;;
    run) opts="--mode --log --prime --emulate-driver --rescue --stale --hang --quiet -q --error-exitcode --request-path-loads --metrics --help --" ;;
    report) opts="--all --json --html --trace --help" ;;
    doctor) opts="--prime --help" ;;
    prime)
      case $sub in
        "") opts="list show info verify prune merge rm learn check export import --help" ;;
        learn) opts="--prime --log --label --help --" ;;
        check) opts="--prime --log --help --" ;;
        export | import) opts="--oci --prime --help" ;;
        prune) opts="--older-than --max-size --dry-run --help" ;;
        *) opts="--help" ;;
      esac ;;
    *) return ;;
  esac
  if [[ $cur == -* ]] || [ "$cmd" = "" ] || { [ "$cmd" = prime ] && [ -z "$sub" ]; }; then
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -f -- "$cur") # logs, priming files
  fi
}
complete -F _capguard capguard
