# Helpers that every folder's CMakeLists.txt uses, so each room only names its sources.

set(GOVERN_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
    -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough
    -Wno-missing-field-initializers)  # designated initializers may leave fields at their defaults
if(GOVERN_WERROR)
  list(APPEND GOVERN_WARNINGS -Werror)
endif()

if(GOVERN_FUZZ)
  # Everything is instrumented for coverage; only the fuzz targets link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(GOVERN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# Asio: no deprecated names, and no Boost.System library needed.
add_compile_definitions(BOOST_ASIO_NO_DEPRECATED)

# Every executable that a "unit"-labelled test runs, so the sanitizer pass of scripts/test builds only
# what it runs (not the benchmarks, the govern binary or the e2e helpers).
if(NOT TARGET govern_unit_tests)
  add_custom_target(govern_unit_tests)
endif()

# Precompiled headers (GOVERN_PCH, on in the asan preset). Most files include the standard library and
# nlohmann/json, and every test file GoogleTest and GoogleMock; parsed once per build instead of once
# per file, they took the cold asan build from 1,132 to 937 s on 2 cores (docs/architecture.md, Build).
# GCC takes a precompiled header only into a file compiled with the flags it was made with, so there
# is one per set of flags, each reused by every target of that set: govern_pch (libraries, benchmarks,
# fuzz replay targets), govern_pch_pic (the -fPIC libraries of policy/capi) and govern_pch_test (GoogleTest
# binaries). CMake adds -Winvalid-pch: with -Werror a header GCC cannot take fails the build rather
# than slowing it silently. Off in the optimised presets: there GCC 12 reports -Warray-bounds false
# positives inside libstdc++'s inlined string code when the header comes from a precompiled header
# (audit/checkpoint.cc at -O1), which it keeps quiet when the same header is parsed.
option(GOVERN_PCH "Precompile the standard library, nlohmann/json and GoogleTest headers" OFF)
if(GOVERN_FUZZ)
  set(GOVERN_PCH OFF)
endif()
set(GOVERN_PCH_HEADERS <algorithm> <array> <atomic> <charconv> <chrono> <condition_variable> <cstddef>
    <cstdint> <cstdio> <cstdlib> <cstring> <filesystem> <fstream> <functional> <map> <memory> <mutex>
    <optional> <set> <span> <sstream> <string> <string_view> <thread> <unordered_map> <utility>
    <variant> <vector> <nlohmann/json.hpp>)
if(GOVERN_PCH)
  foreach(kind pch pch_pic pch_test)
    add_library(govern_${kind} OBJECT EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/cmake/pch/anchor.cc)
    target_compile_options(govern_${kind} PRIVATE ${GOVERN_WARNINGS})
    target_link_libraries(govern_${kind} PRIVATE nlohmann_json::nlohmann_json)
  endforeach()
  target_precompile_headers(govern_pch PRIVATE ${GOVERN_PCH_HEADERS})
  set_target_properties(govern_pch_pic PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_compile_options(govern_pch_pic PRIVATE -fno-semantic-interposition)
  target_precompile_headers(govern_pch_pic PRIVATE ${GOVERN_PCH_HEADERS})
  target_link_libraries(govern_pch_test PRIVATE GTest::gtest GTest::gmock)
  target_precompile_headers(govern_pch_test PRIVATE ${GOVERN_PCH_HEADERS} <gtest/gtest.h> <gmock/gmock.h>)
endif()

# Unity builds (GOVERN_UNITY, on in the asan and test presets that scripts/test builds): a library's or
# test binary's files are compiled UNITY_BATCH at a time as one translation unit, so the templates they
# share (nlohmann/json, GoogleTest, the standard library) are instantiated and compiled once per batch.
# Off in the release preset (what scripts/bench measures) and where a target sets UNITY_BUILD OFF. Names
# at namespace scope in a .cc file's anonymous namespace must therefore be unique within its target.
option(GOVERN_UNITY "Compile each target's files in batches (unity build)" OFF)
set(GOVERN_UNITY_BATCH 8 CACHE STRING "Files per unity translation unit")

# govern_compile_setup(TARGET KIND): TARGET's C++ files take the precompiled header govern_KIND (pch,
# pch_pic or pch_test; TARGET must be compiled with that header's flags) and are built in unity batches
# under GOVERN_UNITY.
function(govern_compile_setup target kind)
  if(GOVERN_PCH)
    target_precompile_headers(${target} REUSE_FROM govern_${kind})
  endif()
  if(GOVERN_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${GOVERN_UNITY_BATCH})
    # A class declared in a header and defined in a .cc file may hold types of that file's anonymous
    # namespace; GCC warns when the .cc is not the main file, which in a unity batch it never is.
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()

# govern_library(NAME SOURCES ... DEPS ...): a static library under src/, included as "folder/header.h".
function(govern_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE ${GOVERN_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  govern_compile_setup(${name} pch)
endfunction()

# govern_test(NAME SOURCES ... DEPS ... [LABELS ...] [FIXTURES ...]): a GoogleTest binary registered
# with ctest. Label "unit" runs in every build including the sanitizer build; tests that need the
# shared PostgreSQL take FIXTURES pg (see tests/CMakeLists.txt).
function(govern_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS;FIXTURES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${GOVERN_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  govern_compile_setup(${name} pch_test)
  add_test(NAME ${name} COMMAND ${name} --gtest_color=no)
  set(labels unit)
  if(ARG_LABELS)
    set(labels ${ARG_LABELS})
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${labels}")
  if("unit" IN_LIST labels)
    add_dependencies(govern_unit_tests ${name})
    if(NOT GOVERN_UNIT_TESTS_IN_ALL)
      set_target_properties(${name} PROPERTIES EXCLUDE_FROM_ALL ON)
    endif()
  endif()
  if(ARG_FIXTURES)
    set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED "${ARG_FIXTURES}"
                         ENVIRONMENT "GOVERN_TEST_PG_DIR=${PROJECT_BINARY_DIR}/testpg")
  endif()
  if(ARG_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  else()
    set_tests_properties(${name} PROPERTIES TIMEOUT 300)
  endif()
endfunction()

# govern_fuzz(NAME SOURCES ... DEPS ...): a fuzz target defining LLVMFuzzerTestOneInput.
# With GOVERN_FUZZ (the "fuzz" preset, clang) it links libFuzzer: run it with scripts/fuzz NAME.
# In every other build it links a small replay driver instead, and ctest replays every input in
# fuzz/corpus/NAME/ (seeds, and the crashes fuzzing found) so they stay fixed, under ASan in the asan build.
function(govern_fuzz name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  if(GOVERN_FUZZ)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  else()
    target_compile_options(${name} PRIVATE ${GOVERN_WARNINGS})
    target_link_libraries(${name} PRIVATE govern_fuzz_replay)
    govern_compile_setup(${name} pch)
    set(corpus ${PROJECT_SOURCE_DIR}/fuzz/corpus/${name})
    add_test(NAME ${name}_replay COMMAND ${name} ${corpus})
    set_tests_properties(${name}_replay PROPERTIES LABELS unit TIMEOUT 300)
    add_dependencies(govern_unit_tests ${name})
    if(NOT GOVERN_UNIT_TESTS_IN_ALL)
      set_target_properties(${name} PROPERTIES EXCLUDE_FROM_ALL ON)
    endif()
  endif()
endfunction()

# govern_bench(NAME [USED_BY_TESTS] SOURCES ... DEPS ...): a load generator or microbenchmark, run by
# scripts/bench. USED_BY_TESTS: an e2e test runs it too, so it is built even where benchmarks are not
# (GOVERN_BENCH_IN_ALL=OFF, the "test" preset).
function(govern_bench name)
  cmake_parse_arguments(ARG "USED_BY_TESTS" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${GOVERN_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  govern_compile_setup(${name} pch)
  if(NOT GOVERN_BENCH_IN_ALL AND NOT ARG_USED_BY_TESTS)
    set_target_properties(${name} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
endfunction()

# govern_add_subfolders(): adds every direct subfolder that has a CMakeLists.txt, so a new test suite,
# benchmark suite or service joins the build without an edit to its parent.
macro(govern_add_subfolders)
  file(GLOB _govern_children LIST_DIRECTORIES true CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*)
  foreach(_govern_child ${_govern_children})
    if(IS_DIRECTORY ${_govern_child} AND EXISTS ${_govern_child}/CMakeLists.txt)
      add_subdirectory(${_govern_child})
    endif()
  endforeach()
endmacro()
