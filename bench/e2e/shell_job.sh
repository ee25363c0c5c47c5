#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A CI-style shell job (issue 18): 241 short processes (sed, grep, awk, sort
# with head, wc, and command substitutions) on small files. Prints a
# checksum of what it computed. Usage: shell_job.sh WORKDIR
set -eu
cd "$1"
for i in $(seq 1 10); do printf 'line %d alpha\nline %d beta\nother %d gamma\n' "$i" "$i" "$i"; done >data.txt
sum=0
for i in $(seq 1 38); do                      # 38 x 6 processes
  sed -n "s/alpha/A$i/p" data.txt >a.txt
  grep -c beta data.txt >/dev/null
  n=$(awk '{ s += length($0) } END { print s }' data.txt)
  sort -r data.txt | head -n 3 >b.txt
  sum=$((sum + n + $(wc -l <a.txt)))
done
for i in $(seq 1 4); do cat data.txt | tr a-z A-Z >c.txt; done
echo "shell job: $sum $(cksum <c.txt)"
