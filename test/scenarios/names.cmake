# SPDX-License-Identifier: Apache-2.0
# Thread names (issue 14 item 4), included from test/scenarios/CMakeLists.txt
# after scenario_tests is defined: a program whose threads name themselves,
# and a stripped copy (its start routines unnamed: the threads' names show).
add_executable(thread_names thread_names.c)
target_compile_options(thread_names PRIVATE -g -O1 -fno-omit-frame-pointer -pthread)
target_link_options(thread_names PRIVATE -pthread)
set_target_properties(thread_names PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/bin)
find_program(GOTRACE_OBJCOPY NAMES objcopy REQUIRED)
set(GOTRACE_NAMES_STRIPPED ${CMAKE_CURRENT_BINARY_DIR}/bin/tnames_stripped)
add_custom_command(
  OUTPUT ${GOTRACE_NAMES_STRIPPED}
  COMMAND ${GOTRACE_OBJCOPY} --strip-all $<TARGET_FILE:thread_names> ${GOTRACE_NAMES_STRIPPED}
  DEPENDS thread_names
  COMMENT "tnames_stripped: thread_names without symbols")
add_custom_target(thread_names_stripped DEPENDS ${GOTRACE_NAMES_STRIPPED})
add_executable(thread_trampoline thread_trampoline.c)
target_compile_options(thread_trampoline PRIVATE -g -O1 -fno-omit-frame-pointer -pthread)
target_link_options(thread_trampoline PRIVATE -pthread)
set_target_properties(thread_trampoline PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/bin)
add_dependencies(scenario_tests thread_names thread_names_stripped thread_trampoline)
