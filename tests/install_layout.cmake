# CTest script: `cmake --install` puts the binary and share/envkit/ in place,
# and the installed binary runs.
# Called with -DBUILD_DIR=... -DPREFIX=...
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE install_result OUTPUT_QUIET)
if(NOT install_result EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${install_result}")
endif()
foreach(expected bin/envkit share/envkit/recipes)
  if(NOT EXISTS "${PREFIX}/${expected}")
    message(FATAL_ERROR "missing after install: ${expected}")
  endif()
endforeach()
execute_process(COMMAND "${PREFIX}/bin/envkit" --version OUTPUT_VARIABLE version
                RESULT_VARIABLE run_result)
if(NOT run_result EQUAL 0 OR NOT version MATCHES "^envkit [0-9]+\\.[0-9]+\\.[0-9]+")
  message(FATAL_ERROR "installed envkit --version failed: ${run_result} ${version}")
endif()
file(REMOVE_RECURSE "${PREFIX}")
