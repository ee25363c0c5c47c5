# SPDX-License-Identifier: Apache-2.0
# debuginfod (issue 14, item 3): a copy of stacks_symbols_pie without debug
# info or symbols (its build-id kept, no .gnu_debuglink), and its debug file
# alone in a directory that debuginfod_test.cc serves with a local
# `debuginfod -F`. Included from test/scenarios/CMakeLists.txt after
# stacks.cmake. The tests carry the CTest label `debuginfod`
# (ctest -L debuginfod) and skip, saying so, without the debuginfod binary.
set(GOTRACE_DBGD_DIR ${CMAKE_CURRENT_BINARY_DIR}/debuginfod)
set(dbgd_program ${GOTRACE_DBGD_DIR}/bin/stacks_dbgd)
set(dbgd_debug ${GOTRACE_DBGD_DIR}/served/stacks_dbgd.debug)
add_custom_command(
  OUTPUT ${dbgd_program} ${dbgd_debug}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${GOTRACE_DBGD_DIR}/bin ${GOTRACE_DBGD_DIR}/served
  COMMAND ${GOTRACE_OBJCOPY} --only-keep-debug $<TARGET_FILE:stacks_symbols_pie> ${dbgd_debug}
  COMMAND ${GOTRACE_OBJCOPY} --strip-debug --strip-unneeded $<TARGET_FILE:stacks_symbols_pie>
          ${dbgd_program}
  DEPENDS stacks_symbols_pie
  COMMENT "stacks_dbgd: stacks_symbols_pie split for the debuginfod tests")
add_custom_target(stacks_dbgd_copies DEPENDS ${dbgd_program} ${dbgd_debug})

add_executable(debuginfod_tests ${PROJECT_SOURCE_DIR}/test/main.cc debuginfod_test.cc)
target_link_libraries(debuginfod_tests PRIVATE gotrace_test_support)
target_compile_definitions(debuginfod_tests PRIVATE
  GOTRACE_SCENARIO_DIR="${CMAKE_CURRENT_BINARY_DIR}/bin"
  GOTRACE_SCENARIO_SRC="${CMAKE_CURRENT_SOURCE_DIR}"
  GOTRACE_DBGD_PROGRAM="${dbgd_program}"
  GOTRACE_DBGD_SERVED="${GOTRACE_DBGD_DIR}/served")
add_dependencies(debuginfod_tests stacks_dbgd_copies gotrace_preload gotrace_encode gotrace)
catch_discover_tests(debuginfod_tests TEST_PREFIX "scenario: "
  PROPERTIES TIMEOUT 90 LABELS debuginfod)

# dwz (issue 14): the DWARF shared by the PIE and non-PIE builds moved into a
# supplementary file (dwz -m, as distributions' debug packages do), which the
# debug file names by a path that does not exist here and by its build-id.
# The debug file has no .symtab, so names can only come from the DWARF and
# its supplementary file. Both are served; without dwz the case says SKIP.
find_program(GOTRACE_DWZ NAMES dwz)
if(GOTRACE_DWZ)
  set(dwz_work ${GOTRACE_DBGD_DIR}/dwz-work)
  set(dwz_program ${GOTRACE_DBGD_DIR}/bin/stacks_dwz)
  set(dwz_debug ${GOTRACE_DBGD_DIR}/served-dwz/stacks_dwz.debug)
  set(dwz_alt ${GOTRACE_DBGD_DIR}/served-dwz/stacks_dwz.alt.debug)
  add_custom_command(
    OUTPUT ${dwz_program} ${dwz_debug} ${dwz_alt}
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${dwz_work} ${GOTRACE_DBGD_DIR}/served-dwz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dwz_work} ${GOTRACE_DBGD_DIR}/bin
            ${GOTRACE_DBGD_DIR}/served-dwz
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:stacks_symbols_pie> ${dwz_work}/a
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:stacks_symbols_nopie> ${dwz_work}/b
    COMMAND ${GOTRACE_DWZ} -m ${dwz_alt} -M /nonexistent/gotrace-test/stacks_dwz.alt.debug
            ${dwz_work}/a ${dwz_work}/b
    COMMAND ${GOTRACE_OBJCOPY} --only-keep-debug ${dwz_work}/a ${dwz_work}/a.debug
    COMMAND ${GOTRACE_OBJCOPY} --strip-all --keep-section=.debug_* --keep-section=.gnu_debugaltlink
            ${dwz_work}/a.debug ${dwz_debug}
    COMMAND ${GOTRACE_OBJCOPY} --strip-debug --strip-unneeded ${dwz_work}/a ${dwz_program}
    DEPENDS stacks_symbols_pie stacks_symbols_nopie
    COMMENT "stacks_dwz: a debug file with a dwz supplementary file, for the debuginfod tests"
    VERBATIM)
  add_custom_target(stacks_dwz_copies DEPENDS ${dwz_program} ${dwz_debug} ${dwz_alt})
  add_dependencies(debuginfod_tests stacks_dwz_copies)
  target_compile_definitions(debuginfod_tests PRIVATE
    GOTRACE_DWZ_PROGRAM="${dwz_program}"
    GOTRACE_DWZ_SERVED="${GOTRACE_DBGD_DIR}/served-dwz")
endif()
