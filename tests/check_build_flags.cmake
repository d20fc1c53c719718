# CTest script: the Check build type (scripts/test's) really compiles with -O1 -DNDEBUG: every
# compile command of the build has them. Called with -DCOMMANDS=<build>/compile_commands.json.
# One "command" per line (CMake writes them so); a command may hold escaped quotes.
file(STRINGS "${COMMANDS}" all REGEX "\"command\": ")
list(LENGTH all count)
if(count EQUAL 0)
  message(FATAL_ERROR "no compile commands in ${COMMANDS}")
endif()
set(missing 0)
foreach(command IN LISTS all)
  if(NOT command MATCHES " -O1 -DNDEBUG ")
    math(EXPR missing "${missing} + 1")
    set(example "${command}")
  endif()
endforeach()
if(missing GREATER 0)
  message(FATAL_ERROR "${missing} of ${count} compile commands lack -O1 -DNDEBUG, e.g. ${example}")
endif()
message(STATUS "all ${count} compile commands have -O1 -DNDEBUG")
