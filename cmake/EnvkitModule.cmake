# envkit_module(NAME SOURCES ... DEPS ... [PRIVATE_DEPS ...])
# One static library per module: envkit_<NAME>, alias envkit::<NAME>.
# Its link list is its allowed dependency list (docs/architecture in ../shared/design).
function(envkit_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(envkit_${name} STATIC ${ARG_SOURCES})
  add_library(envkit::${name} ALIAS envkit_${name})
  target_include_directories(envkit_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(envkit_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  envkit_warnings(envkit_${name})
endfunction()

function(envkit_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion -Wnon-virtual-dtor
                                           # designated initializers may leave members at their defaults
                                           -Wno-missing-field-initializers
                                           -Wold-style-cast -Woverloaded-virtual)
  if(ENVKIT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
