# SPDX-License-Identifier: BSD-3-Clause
# How the tests are built and registered, so that every test gets the same environment,
# a TIMEOUT (a hang fails instead of blocking CI) and a label naming its kind
# (`ctest -L unit|mpi|cli|...`). Included by tests/CMakeLists.txt.

# A skip is a skip. A test that lacks what it needs here (a tmpfs, unshare, h5py, network
# namespaces, setpriv, a libFuzzer compiler, a real Spack or Slurm) prints "SKIP: <why>"
# and exits 77; with SKIP_RETURN_CODE 77 CTest reports it as "Not Run" (skipped) in its
# summary instead of counting it as passed, and scripts/quickstart-test.sh lists it (and
# fails under CI=true). Every test under tests/ gets it: mini5d_skips_are_skips() marks
# every test of the calling folder, those it registers later included (a call deferred
# to the folder's end). The helpers below call it; a folder that registers tests with
# add_test itself calls it at its top, and tests/CMakeLists.txt refuses to configure a
# folder with tests that did not (mini5d_check_skip_codes). No test exits 77 otherwise:
# the Catch2 binaries exit 1 on failure, never their count of failed assertions
# (tests/support/main.cpp), and the apps never exit 77.
set(mini5d_skip_code 77)
function(mini5d_skips_are_skips)
  get_property(deferred DIRECTORY PROPERTY mini5d_skips_deferred)
  if(NOT deferred)
    set_property(DIRECTORY PROPERTY mini5d_skips_deferred TRUE)
    cmake_language(DEFER CALL _mini5d_mark_skips)
  endif()
endfunction()
function(_mini5d_mark_skips)
  get_property(tests DIRECTORY PROPERTY TESTS)
  if(tests)
    set_tests_properties(${tests} PROPERTIES SKIP_RETURN_CODE ${mini5d_skip_code})
  endif()
endfunction()
# mini5d_check_skip_codes(<folder>): a configure error for each folder at or below
# <folder> that registers tests without mini5d_skips_are_skips().
function(mini5d_check_skip_codes dir)
  get_property(tests DIRECTORY ${dir} PROPERTY TESTS)
  get_property(deferred DIRECTORY ${dir} PROPERTY mini5d_skips_deferred)
  if(tests AND NOT deferred)
    message(SEND_ERROR "${dir} registers tests (${tests}) without calling mini5d_skips_are_skips() "
                       "(tests/Mini5dTests.cmake): a test there that exits 77 would pass instead of being skipped")
  endif()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    mini5d_check_skip_codes(${sub})
  endforeach()
endfunction()

# Long tests start first. A clean clone has no CTestCostData.txt, so ctest -j would start
# tests in the order they are registered, and a 400 s test registered late ran alone at
# the end while the other core idled. The tests above a minute carry COST (their
# seconds, measured on the CI's 2 cores), which ctest orders by when it has no data of
# its own.

# Every test runs one OpenMP thread per rank (with a Kokkos OpenMP backend, 4 ranks x
# the default thread count on a 2-core machine made the MPI tests 20 times slower) and
# with OMP_PROC_BIND set, as Kokkos asks.
set(mini5d_test_env "OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1;OMP_PROC_BIND=false")

# The `openmp` tests: on a Kokkos with the OpenMP backend (the README's test command
# builds one, scripts/build-kokkos-openmp.sh, and everything on it in build-openmp/),
# the tests registered with OPENMP_TEAMS run once more per listed team size, at two
# threads per rank with binding off. Kokkos::AUTO gives one thread per team on the host,
# so MINI5D_TEST_TEAM_SIZE (tests/support/main.cpp) fixes it: team size 2 runs the team
# reductions and every kernel's thread-level loops as a GPU would.
# Idle OpenMP threads: a one-rank test (2 threads on the 2 cores ctest gives it) spins a
# little before sleeping, 1000 rounds (GOMP_SPINCOUNT: libgomp's own count where threads
# outnumber cores; its default, 300000, is some milliseconds). With passive waiting every
# kernel launch pays a sleep and a wake-up (test_model_gradients once took 72 s instead of
# 1.8 s); with the default spin, a thread whose partner lost its core to another process
# spins out its time slice at every barrier: under two busy loops test_blockwise_attention
# at team size 2 took 84.6 s and test_moe over 240 s (idle: 3.9 s and 11 s). With 1000
# rounds: 3.97 s idle, 54.5 s under the two loops.
# An MPI test has ranks x threads above the cores, so its idle threads sleep at once
# (OMP_WAIT_POLICY=passive): spinning made test_data_parallel_np4 391 s instead of 31 s.
if("OPENMP" IN_LIST Kokkos_DEVICES)
  set(mini5d_openmp ON)
else()
  set(mini5d_openmp OFF)
endif()
set(mini5d_openmp_threads 2)
set(mini5d_openmp_env "OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=${mini5d_openmp_threads};OMP_PROC_BIND=false")

# mini5d_openmp_variants(<test> <ranks> <teams> <hang_limit> <command>...): <test>_omp_team<n>
# for each n in <teams> (a list), label `openmp` (and `mpi` when ranks > 1); <hang_limit>:
# the one-thread test's CTest TIMEOUT, the guard that turns a hang into a failure.
function(mini5d_openmp_variants test ranks teams hang_limit)
  mini5d_skips_are_skips()
  if(NOT mini5d_openmp)
    return()
  endif()
  set(labels openmp)
  set(env ${mini5d_openmp_env})
  if(ranks GREATER 1)
    list(APPEND labels mpi)
    list(APPEND env "OMP_WAIT_POLICY=passive")
  else()
    list(APPEND env "GOMP_SPINCOUNT=1000")
  endif()
  math(EXPR cores "${ranks} * ${mini5d_openmp_threads}")
  # Threads contend for the same cores as the other tests' ranks and whatever else runs
  # (CI has 2): the base test's limit, times twice the threads per rank, so a loaded
  # machine slows it, never fails it (under two busy loops the one-rank team-2 tests ran
  # up to 25 times slower than idle: test_model_gradients 223 s against 9 s).
  math(EXPR timeout "${hang_limit} * ${mini5d_openmp_threads} * 2")
  foreach(team IN LISTS teams)
    add_test(NAME ${test}_omp_team${team} COMMAND ${ARGN})
    set_tests_properties(${test}_omp_team${team} PROPERTIES TIMEOUT ${timeout} PROCESSORS ${cores} LABELS "${labels}"
                         ENVIRONMENT "${env};MINI5D_TEST_TEAM_SIZE=${team}")
  endforeach()
endfunction()

# mini5d_test_executable(<name> [LIBS <lib>...])
# A Catch2 test binary from <name>.cpp in the calling folder, with the shared entry
# point and helpers (tests/support) and the sources' path as MINI5D_SOURCE_DIR.
function(mini5d_test_executable name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "LIBS")
  add_executable(${name} ${name}.cpp)
  target_link_libraries(${name} PRIVATE mini5d_test_main mini5d mini5d_warnings ${arg_LIBS})
  target_compile_definitions(${name} PRIVATE MINI5D_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endfunction()

# mini5d_unit_test(NAME <test> [TARGET <binary>] TIMEOUT <s> [ARGS <arg>...] [LABELS <label>...]
#                  [PROPERTIES <prop> <value>...] [OPENMP_TEAMS <team size>...])
# Registers a one-rank Catch2 test, label `unit` (and LABELS), running <binary> (default
# <test>, built from <test>.cpp if no such target exists yet) with ARGS (a test spec).
function(mini5d_unit_test)
  mini5d_skips_are_skips()
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;TARGET;TIMEOUT" "ARGS;LABELS;PROPERTIES;OPENMP_TEAMS")
  if(NOT arg_TARGET)
    set(arg_TARGET ${arg_NAME})
  endif()
  if(NOT TARGET ${arg_TARGET})
    mini5d_test_executable(${arg_TARGET})
  endif()
  set(labels unit ${arg_LABELS})
  add_test(NAME ${arg_NAME} COMMAND ${arg_TARGET} ${arg_ARGS})
  set_tests_properties(${arg_NAME} PROPERTIES TIMEOUT ${arg_TIMEOUT} ENVIRONMENT "${mini5d_test_env}"
                       LABELS "${labels}" ${arg_PROPERTIES})
  if(arg_OPENMP_TEAMS)
    mini5d_openmp_variants(${arg_NAME} 1 "${arg_OPENMP_TEAMS}" ${arg_TIMEOUT} ${arg_TARGET} ${arg_ARGS})
  endif()
endfunction()

# mini5d_mpi_test(NAME <binary> RANKS <np>... TIMEOUT <s> [ARGS <arg>...] [LABELS <label>...]
#                 [SUFFIX <suffix>] [PROPERTIES <prop> <value>...] [OPENMP_TEAMS <team size>...]
#                 [OPENMP_ARGS <arg>...] [OPENMP_ONLY])
# Registers <binary> under mpiexec once per rank count: test <binary>_np<np> (SUFFIX
# replaces "np") with PROCESSORS np, so that ctest -j counts the cores the ranks take,
# label `mpi` (and LABELS). <binary> is built from <binary>.cpp in the calling folder
# unless a target of that name exists already (a unit binary with [mpi] cases, or one
# that needs other libraries). OPENMP_ONLY: only the OPENMP_TEAMS variants, for a test
# whose one-thread run would repeat what other tests check. OPENMP_ARGS: the variants'
# test spec instead of ARGS (tests/mpi/CMakeLists.txt says which cases run threaded).
function(mini5d_mpi_test)
  mini5d_skips_are_skips()
  cmake_parse_arguments(PARSE_ARGV 0 arg "OPENMP_ONLY" "NAME;TIMEOUT;SUFFIX" "RANKS;ARGS;LABELS;PROPERTIES;OPENMP_TEAMS;OPENMP_ARGS")
  if(NOT arg_SUFFIX)
    set(arg_SUFFIX np)
  endif()
  if(NOT DEFINED arg_OPENMP_ARGS)
    set(arg_OPENMP_ARGS ${arg_ARGS})
  endif()
  if(NOT TARGET ${arg_NAME})
    mini5d_test_executable(${arg_NAME})
  endif()
  set(labels mpi ${arg_LABELS})
  foreach(np IN LISTS arg_RANKS)
    set(test ${arg_NAME}_${arg_SUFFIX}${np})
    if(NOT arg_OPENMP_ONLY)
      add_test(NAME ${test}
               COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} $<TARGET_FILE:${arg_NAME}> ${arg_ARGS})
      set_tests_properties(${test} PROPERTIES PROCESSORS ${np} TIMEOUT ${arg_TIMEOUT} ENVIRONMENT "${mini5d_test_env}"
                           LABELS "${labels}" ${arg_PROPERTIES})
    endif()
    if(arg_OPENMP_TEAMS)
      mini5d_openmp_variants(${test} ${np} "${arg_OPENMP_TEAMS}" ${arg_TIMEOUT} ${MPIEXEC_EXECUTABLE}
                             ${MPIEXEC_NUMPROC_FLAG} ${np} $<TARGET_FILE:${arg_NAME}> ${arg_OPENMP_ARGS})
    endif()
  endforeach()
endfunction()

# mini5d_cli_test(<test> <command>...)
# Registers a test of the app from the command line (usually a script in tests/cli
# driving it), label `cli`, 60 s unless set otherwise after; MINI5D_NO_BIND=1 so that
# tests running side by side do not pin their ranks to the same cores. Each runs in a
# folder of its own: tests side by side would otherwise meet in the default checkpoint
# directory and report path, which a run locks (and then refuses the other run).
function(mini5d_cli_test name)
  mini5d_skips_are_skips()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/work/${name})
  file(MAKE_DIRECTORY ${dir})
  add_test(NAME ${name} COMMAND ${ARGN} WORKING_DIRECTORY ${dir})
  set_tests_properties(${name} PROPERTIES TIMEOUT 60 ENVIRONMENT "${mini5d_test_env};MINI5D_NO_BIND=1" LABELS cli)
endfunction()
