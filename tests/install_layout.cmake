# CTest script: `cmake --install` puts the binary, envkit-smoke (libexec/envkit/, where
# `envkit smoke` looks for it) and share/envkit/ in place, and the installed binary runs.
# Called with -DBUILD_DIR=... -DPREFIX=...
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE install_result OUTPUT_QUIET)
if(NOT install_result EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${install_result}")
endif()
foreach(expected bin/envkit libexec/envkit/envkit-smoke share/envkit/recipes
                 share/envkit/smoke/kernels.cuh)
  if(NOT EXISTS "${PREFIX}/${expected}")
    message(FATAL_ERROR "missing after install: ${expected}")
  endif()
endforeach()
execute_process(COMMAND "${PREFIX}/bin/envkit" --version OUTPUT_VARIABLE version
                RESULT_VARIABLE run_result)
if(NOT run_result EQUAL 0 OR NOT version MATCHES "^envkit [0-9]+\\.[0-9]+\\.[0-9]+")
  message(FATAL_ERROR "installed envkit --version failed: ${run_result} ${version}")
endif()
# The installed binary reads the database installed beside it, and it is consistent.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ENVKIT_RECIPES
                        "${PREFIX}/bin/envkit" recipes check
                ERROR_VARIABLE check_output RESULT_VARIABLE check_result)
if(NOT check_result EQUAL 0 OR NOT check_output MATCHES "share/envkit/recipes: 8 packages")
  message(FATAL_ERROR "installed envkit does not read its installed database: ${check_output}")
endif()
file(REMOVE_RECURSE "${PREFIX}")
