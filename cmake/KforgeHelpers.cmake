# Helpers shared by every folder: one way to declare a library, an executable
# and a test (with labels fast, db, slow, gpu), and to embed files (SQL, OpenAPI).

# kforge_add_library(name SOURCES <file>.cpp ... [DEPS lib ...] [PUBLIC_DEPS lib ...])
function(kforge_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(ARG_PUBLIC_DEPS)
    target_link_libraries(${name} PUBLIC ${ARG_PUBLIC_DEPS})
  endif()
  if(ARG_DEPS)
    target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  endif()
endfunction()

# kforge_add_executable(name SOURCES main.cpp DEPS lib ...)
function(kforge_add_executable name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()

# kforge_add_test(name SOURCES <test>.cpp DEPS lib ... LABELS fast|db|slow|gpu [TIMEOUT s] [SHARDS n] [COST c])
# Every test binary links GoogleTest and tests/support; `ctest -L <label>` picks by label.
# SHARDS n registers the binary as n ctest tests, name.1ofn ... name.nofn, each running every
# n-th TEST through GoogleTest's own sharding (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX), so
# `ctest -j` spreads a binary of several long TESTs over cores: on a 16-core GPU host the
# longest binary, not the sum of its TESTs, bounds the suite. `ctest -R <name>` still runs all.
# COST c (ctest's COST: the higher, the earlier it starts) puts the long tests first on a
# fresh build, which has no timings of its own yet, so none starts last and sets the end.
function(kforge_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;SHARDS;COST" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} kforge_test_support GTest::gtest GTest::gtest_main)
  if(NOT ARG_LABELS)
    set(ARG_LABELS fast)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  if(NOT ARG_SHARDS)
    set(ARG_SHARDS 1)
  endif()
  foreach(shard RANGE 1 ${ARG_SHARDS})
    if(ARG_SHARDS EQUAL 1)
      set(test_name ${name})
    else()
      set(test_name ${name}.${shard}of${ARG_SHARDS})
    endif()
    add_test(NAME ${test_name} COMMAND ${name})
    # ctest reports a test that calls GTEST_SKIP as skipped, not passed.
    set_tests_properties(${test_name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
      SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
    if(ARG_COST)
      set_tests_properties(${test_name} PROPERTIES COST ${ARG_COST})
    endif()
    if(ARG_SHARDS GREATER 1)
      math(EXPR index "${shard} - 1")
      set_tests_properties(${test_name} PROPERTIES
        ENVIRONMENT "GTEST_TOTAL_SHARDS=${ARG_SHARDS};GTEST_SHARD_INDEX=${index}")
    endif()
  endforeach()
endfunction()

# kforge_embed_files(target VAR name DIR dir GLOB pattern | FILES name...): compiles
# files under dir (every match of the recursive glob, sorted, or the names given) into a
# generated source exposing `const kforge::EmbeddedFile <name>[]` (path relative to dir,
# text), so SQL and the OpenAPI document live in their own files yet ship inside the
# binary. The script is cmake/EmbedFiles.cmake.
function(kforge_embed_files target)
  cmake_parse_arguments(ARG "" "DIR;VAR;GLOB" "FILES" ${ARGN})
  set(names ${ARG_FILES})
  if(ARG_GLOB)
    file(GLOB_RECURSE names CONFIGURE_DEPENDS RELATIVE ${ARG_DIR} ${ARG_DIR}/${ARG_GLOB})
    list(SORT names)
  endif()
  list(TRANSFORM names PREPEND ${ARG_DIR}/ OUTPUT_VARIABLE paths)
  string(REPLACE ";" "," name_list "${names}")
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${ARG_VAR}_embedded.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DVAR=${ARG_VAR} -DDIR=${ARG_DIR} -DFILES=${name_list}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake
    DEPENDS ${paths} ${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake
    COMMENT "Embedding ${ARG_VAR} from ${ARG_DIR}")
  target_sources(${target} PRIVATE ${out})
endfunction()
