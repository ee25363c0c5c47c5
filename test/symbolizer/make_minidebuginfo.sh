#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Makes a MiniDebugInfo copy of an ELF file the way Fedora's find-debuginfo
# does: stripped of everything, plus a .gnu_debugdata section holding an
# xz-compressed ELF with the function symbols that .dynsym lacks.
# Usage: make_minidebuginfo.sh OBJCOPY NM XZ INPUT OUTPUT
set -eu
objcopy=$1 nm=$2 xz=$3 in=$4 out=$5
tmp="$out.work"
rm -rf "$tmp"
mkdir -p "$tmp"
"$nm" -D "$in" --format=posix --defined-only | awk '{print $1}' | sort > "$tmp/dynsyms"
"$nm" "$in" --format=posix --defined-only |
  awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort > "$tmp/funcsyms"
comm -13 "$tmp/dynsyms" "$tmp/funcsyms" > "$tmp/keep_symbols"
"$objcopy" --only-keep-debug "$in" "$tmp/debug"
"$objcopy" -S --remove-section .gdb_index --remove-section .comment \
  --keep-symbols="$tmp/keep_symbols" "$tmp/debug" "$tmp/mini_debuginfo"
"$objcopy" --strip-all --remove-section .comment "$in" "$tmp/stripped"
"$xz" --force --keep "$tmp/mini_debuginfo"
"$objcopy" --add-section .gnu_debugdata="$tmp/mini_debuginfo.xz" "$tmp/stripped" "$out"
rm -rf "$tmp"
