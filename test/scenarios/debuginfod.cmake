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
