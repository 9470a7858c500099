# Run at build time (cmake -P): writes the current git hash into OUT as a C string
# literal, touching OUT only when the hash changed, so a commit rebuilds platform.cpp
# alone and the start-up header never reports a stale hash.
execute_process(COMMAND git rev-parse --short HEAD
                WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE hash OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET)
if(NOT hash)
  set(hash "unknown")
endif()
set(text "\"${hash}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE ${OUT} "${text}")
