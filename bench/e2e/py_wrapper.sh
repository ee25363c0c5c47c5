#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A version-manager shim in front of python3 (issue 18: pyenv runs ~37
# processes before the interpreter): 30 short processes (readlink, dirname,
# basename, cat, test, uname), then exec python3 ARGS.
set -eu
dir=$(dirname "$(readlink -f "$0")")
for i in $(seq 1 5); do
  v=$(cat /etc/debian_version)
  b=$(basename "$dir")
  d=$(dirname "$dir")
  u=$(uname -m)
  /usr/bin/test -x /usr/bin/python3
done
exec /usr/bin/python3 "$@"
