# SPDX-License-Identifier: Apache-2.0
# Heap scenarios (issue 5), included from test/scenarios/CMakeLists.txt after
# scenario_tests is defined. Built like the other scenarios: plain C/C++ with
# frame pointers and debug info; the helper libraries land next to them.
set(GOTRACE_HEAP_SCENARIOS heap_grow heap_storm heap_early heap_dlopen_tls heap_edge heap_gai
    heap_snapshot)
foreach(s ${GOTRACE_HEAP_SCENARIOS})
  add_executable(${s} ${s}.c)
endforeach()
add_executable(heap_cxx heap_cxx.cc)
add_library(heap_early_lib SHARED heap_early_lib.c)
add_library(heap_tls_lib SHARED heap_tls_lib.c)
set(GOTRACE_HEAP_TARGETS ${GOTRACE_HEAP_SCENARIOS} heap_cxx heap_early_lib heap_tls_lib)
foreach(t ${GOTRACE_HEAP_TARGETS})
  target_compile_options(${t} PRIVATE -g -O1 -fno-omit-frame-pointer -pthread)
  target_link_options(${t} PRIVATE -pthread)
endforeach()
target_link_libraries(heap_early PRIVATE ${CMAKE_DL_LIBS})
target_link_libraries(heap_dlopen_tls PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(${GOTRACE_HEAP_TARGETS} PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/bin
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/bin)
add_dependencies(scenario_tests ${GOTRACE_HEAP_TARGETS})
