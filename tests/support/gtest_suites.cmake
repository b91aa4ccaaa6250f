# Writes CTEST_FILE: one ctest test per GoogleTest test suite of TEST_EXECUTABLE, run as
# `TEST_EXECUTABLE --gtest_filter=<suite>.*`, with the properties TEST_PROPERTIES (a list of
# name-value pairs) and COST = the suite's number of tests, so that ctest starts the largest
# suites first. TEST_FILTER (optional) is a --gtest_filter choosing whole suites. Run after each
# link of the binary (trainingd_gtest_suites, tests/CMakeLists.txt, which says why suites).
cmake_minimum_required(VERSION 3.25)

set(list_args --gtest_list_tests)
if(TEST_FILTER)
  list(APPEND list_args "--gtest_filter=${TEST_FILTER}")
endif()
execute_process(COMMAND "${TEST_EXECUTABLE}" ${list_args}
                TIMEOUT 60 OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE "${CTEST_FILE}")
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${rc}):\n${listing}${errors}")
endif()

# The listing: "Suite." (or "Prefix/Suite.  # TypeParam = ..."), then "  Test" lines.
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suites)
set(suite "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.( |$)")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set(count_${suite} 0)
  elseif(suite AND line MATCHES "^  [^ ]")
    math(EXPR count_${suite} "${count_${suite}} + 1")
  endif()
endforeach()

set(out "")
foreach(suite IN LISTS suites)
  string(APPEND out "add_test([==[${suite}]==] [==[${TEST_EXECUTABLE}]==] "
                    "[==[--gtest_filter=${suite}.*]==])\n"
                    "set_tests_properties([==[${suite}]==] PROPERTIES COST ${count_${suite}}")
  foreach(item IN LISTS TEST_PROPERTIES)
    string(APPEND out " [==[${item}]==]")
  endforeach()
  string(APPEND out ")\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${out}")
