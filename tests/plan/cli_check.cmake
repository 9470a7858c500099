# SPDX-License-Identifier: BSD-3-Clause
# Runs CMD (a ;-list) and checks its exit status (EXPECT_RC: a number) and that
# stdout+stderr match EXPECT_REGEX. Used by the plan.cli.* tests.
execute_process(COMMAND ${CMD} WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "exit status ${rc}, expected ${EXPECT_RC}; output:\n${all}")
endif()
if(NOT all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}':\n${all}")
endif()
# EXPECT_STDERR_LINES: the exact number of lines on stderr (one error line and a hint).
if(DEFINED EXPECT_STDERR_LINES)
  string(REGEX MATCHALL "\n" nl "${err}")
  list(LENGTH nl n)
  if(NOT n EQUAL EXPECT_STDERR_LINES)
    message(FATAL_ERROR "stderr has ${n} lines, expected ${EXPECT_STDERR_LINES}:\n${err}")
  endif()
endif()
message(STATUS "ok: exit ${rc}, matched '${EXPECT_REGEX}'")
