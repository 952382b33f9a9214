#!/usr/bin/env bash
# Prints the command of a Python >= 3.12 interpreter, or fails with a clear message.
# pyenv shims answer for versions that are not selected, so each candidate is tried for real.
set -u
check='import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)'
for candidate in "python3.13" "python3.12" "PYENV_VERSION=3.12 python3.12" "PYENV_VERSION=3.13 python3.13" "python3"; do
  if env ${candidate} -c "$check" >/dev/null 2>&1; then
    echo "env ${candidate}"
    exit 0
  fi
done
echo "error: Python 3.12 or newer is required (tried python3.13, python3.12, pyenv 3.12/3.13, python3)" >&2
exit 1
