#!/bin/sh
# Runs the Python stack test under interpreter NAME (python3.12, python3.13,
# ...) found on PATH or among pyenv's versions, so the export differences
# between CPython versions are exercised; exits 77 (skip) with the reason
# when there is no such interpreter.
name=$1
shift
py=
if command -v "$name" >/dev/null 2>&1 && "$name" -c pass >/dev/null 2>&1; then
  py=$name
elif command -v pyenv >/dev/null 2>&1; then
  for c in "$(pyenv root)"/versions/*/bin/"$name"; do
    if [ -x "$c" ] && "$c" -c pass >/dev/null 2>&1; then py=$c; fi
  done
fi
if [ -z "$py" ]; then
  echo "skip: no working $name on PATH or among pyenv's versions"
  exit 77
fi
echo "interpreter: $py"
exec "$py" "$@"
