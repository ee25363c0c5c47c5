# SPDX-License-Identifier: Apache-2.0
# Stack scenarios (issue 7: stacks users can trust), included from
# test/scenarios/CMakeLists.txt after scenario_tests is defined. Each program
# is built the way its case needs (inlining, no frame pointers, PIE or not,
# stripped, plugins); stacks_test.cc runs them plain and traced.
set(GOTRACE_STACKS_BIN ${CMAKE_CURRENT_BINARY_DIR}/bin)

# A wait inside a function inlined at -O2.
add_executable(stacks_inline stacks_inline.c)
target_compile_options(stacks_inline PRIVATE -g -O2 -fno-omit-frame-pointer -pthread)

# Plugins loaded, waited in and unloaded in turn (address ranges reused).
add_executable(stacks_dlclose stacks_dlclose.c)
target_compile_options(stacks_dlclose PRIVATE -g -O1 -fno-omit-frame-pointer -pthread)
target_link_libraries(stacks_dlclose PRIVATE ${CMAKE_DL_LIBS})
foreach(p a b)
  add_library(stacks_plugin_${p} MODULE stacks_plugin_${p}.c)
  target_compile_options(stacks_plugin_${p} PRIVATE -g -O2 -fno-omit-frame-pointer -pthread)
  set_target_properties(stacks_plugin_${p} PROPERTIES PREFIX "")
endforeach()

# Code without frame pointers (GOTRACE_UNWIND=libunwind, and fp must not crash).
add_executable(stacks_nofp stacks_nofp.c)
target_compile_options(stacks_nofp PRIVATE -g -O2 -fomit-frame-pointer -pthread)
# CPU samples in code without frame pointers: stack copies walked by CFI.
add_executable(cpu_nofp cpu_nofp.c)
target_compile_options(cpu_nofp PRIVATE -g -O2 -fomit-frame-pointer -pthread)

# The default unwinding on code without frame pointers (issue 14): a
# contended lock and a blocking read three calls deep, one caller with rbp
# as a general register (C), and the same through C++ (templates, lambdas,
# std::function, virtual calls).
add_executable(stacks_auto stacks_auto.c)
target_compile_options(stacks_auto PRIVATE -g -O2 -fomit-frame-pointer -pthread)
add_executable(stacks_auto_cxx stacks_auto_cxx.cc)
target_compile_options(stacks_auto_cxx PRIVATE -g -O2 -fomit-frame-pointer -pthread)

# C++ exceptions in worker threads (built -O2: no frame pointers either).
add_executable(stacks_exceptions stacks_exceptions.cc)
target_compile_options(stacks_exceptions PRIVATE -g -O2 -pthread)
target_link_libraries(stacks_exceptions PRIVATE ${CMAKE_DL_LIBS})

# unwind/libunwind_unwind.h's promises, checked in a process of its own.
add_executable(stacks_libunwind_probe stacks_libunwind_probe.cc)
target_compile_options(stacks_libunwind_probe PRIVATE -g -O2 -fomit-frame-pointer -pthread)
target_link_libraries(stacks_libunwind_probe PRIVATE gotrace_unwind ${CMAKE_DL_LIBS})
set_target_properties(stacks_libunwind_probe PROPERTIES ENABLE_EXPORTS ON)  # -rdynamic: dladdr names
# Two plugins with the same code and different unwind rules (the probe's
# stale-rules check).
add_library(stacks_cfi_lie MODULE stacks_cfi_plugin.c)
target_compile_definitions(stacks_cfi_lie PRIVATE CFA_OFFSET=120)
add_library(stacks_cfi_truth MODULE stacks_cfi_plugin.c)
target_compile_definitions(stacks_cfi_truth PRIVATE CFA_OFFSET=32)
set_target_properties(stacks_cfi_lie stacks_cfi_truth PROPERTIES PREFIX "")
add_executable(stacks_cfi_reload stacks_cfi_reload.c)
target_compile_options(stacks_cfi_reload PRIVATE -g -O1 -fno-omit-frame-pointer -pthread)
target_link_libraries(stacks_cfi_reload PRIVATE ${CMAKE_DL_LIBS})

# Symbols: PIE and non-PIE builds of one program, each copied with its DWARF
# in a separate file found through .gnu_debuglink, and fully stripped.
find_program(GOTRACE_OBJCOPY NAMES objcopy REQUIRED)
add_executable(stacks_symbols_pie stacks_symbols.c)
target_compile_options(stacks_symbols_pie PRIVATE -g -O2 -fno-omit-frame-pointer -pthread -fPIE)
target_link_options(stacks_symbols_pie PRIVATE -pie)
add_executable(stacks_symbols_nopie stacks_symbols.c)
set_target_properties(stacks_symbols_nopie PROPERTIES POSITION_INDEPENDENT_CODE OFF)
target_compile_options(stacks_symbols_nopie PRIVATE -g -O2 -fno-omit-frame-pointer -pthread -fno-pie)
target_link_options(stacks_symbols_nopie PRIVATE -no-pie)
set(GOTRACE_STACKS_COPIES)
foreach(kind pie nopie)
  set(src $<TARGET_FILE:stacks_symbols_${kind}>)
  set(debuglink ${GOTRACE_STACKS_BIN}/stacks_debuglink_${kind})
  set(stripped ${GOTRACE_STACKS_BIN}/stacks_stripped_${kind})
  add_custom_command(
    OUTPUT ${debuglink} ${debuglink}.debug
    COMMAND ${GOTRACE_OBJCOPY} --only-keep-debug ${src} ${debuglink}.debug
    COMMAND ${GOTRACE_OBJCOPY} --strip-all --add-gnu-debuglink=${debuglink}.debug ${src} ${debuglink}
    DEPENDS stacks_symbols_${kind}
    COMMENT "stacks_debuglink_${kind}: debug info in a file named by .gnu_debuglink")
  add_custom_command(
    OUTPUT ${stripped}
    COMMAND ${GOTRACE_OBJCOPY} --strip-all ${src} ${stripped}
    DEPENDS stacks_symbols_${kind}
    COMMENT "stacks_stripped_${kind}: no symbols, no debug info")
  list(APPEND GOTRACE_STACKS_COPIES ${debuglink} ${debuglink}.debug ${stripped})
endforeach()
add_custom_target(stacks_symbol_copies DEPENDS ${GOTRACE_STACKS_COPIES})

set(GOTRACE_STACKS_TARGETS stacks_inline stacks_dlclose stacks_plugin_a stacks_plugin_b stacks_nofp cpu_nofp
  stacks_auto stacks_auto_cxx
  stacks_exceptions stacks_libunwind_probe stacks_cfi_lie stacks_cfi_truth stacks_cfi_reload
  stacks_symbols_pie
  stacks_symbols_nopie)
foreach(t ${GOTRACE_STACKS_TARGETS})
  target_link_options(${t} PRIVATE -pthread)
endforeach()
set_target_properties(${GOTRACE_STACKS_TARGETS} PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${GOTRACE_STACKS_BIN}
  LIBRARY_OUTPUT_DIRECTORY ${GOTRACE_STACKS_BIN})
add_dependencies(scenario_tests ${GOTRACE_STACKS_TARGETS} stacks_symbol_copies)
