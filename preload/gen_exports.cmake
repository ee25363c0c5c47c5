# SPDX-License-Identifier: Apache-2.0
# Writes the version script of libgotrace.so: exactly the functions defined
# with GT_EXPORT in the interposer sources (G6), everything else local.
#   cmake -DOUT=exports.map "-DSOURCES=a.cc|b.cc" -P gen_exports.cmake
set(names "")
string(REPLACE "|" ";" SOURCES "${SOURCES}")
foreach(src IN LISTS SOURCES)
  file(READ "${src}" content)
  string(REGEX MATCHALL "GT_EXPORT[ \t\n][^(;{}#]*\\(" defs "${content}")
  foreach(d IN LISTS defs)
    string(REGEX REPLACE ".*[ \t\n*]([A-Za-z0-9_]+)[ \t\n]*\\($" "\\1" name "${d}")
    list(APPEND names "${name}")
  endforeach()
  # Declarations with GT_EXPORT_AS(symbol): the symbol (not the macro's own
  # definition, which has no identifier in its parentheses).
  string(REGEX MATCHALL "GT_EXPORT_AS\\([A-Za-z0-9_]+\\)" renamed "${content}")
  foreach(d IN LISTS renamed)
    string(REGEX REPLACE "GT_EXPORT_AS\\(([A-Za-z0-9_]+)\\)" "\\1" name "${d}")
    list(APPEND names "${name}")
  endforeach()
endforeach()
list(REMOVE_DUPLICATES names)
list(SORT names)
set(text "/* Generated from the GT_EXPORT definitions in preload/ (gen_exports.cmake). */\n{\n  global:\n")
foreach(n IN LISTS names)
  string(APPEND text "    ${n};\n")
endforeach()
string(APPEND text "  local: *;\n};\n")
file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
