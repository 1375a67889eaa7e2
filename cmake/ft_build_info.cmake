# The build facts `ft bench --json` records ("build": runtime/cli/cli_bench_info.c),
# so that a benchmark says what produced it:
#   ft_build_info.h      at configure time: version, compiler, build type,
#                        the C flags in force and every FT_* option;
#   ft_build_revision.h  at build time, rewritten only when it changes: the
#                        source revision (git describe --always --dirty), or
#                        "unknown" outside a git checkout.
# Included at the end of the top-level CMakeLists.txt, once every option is
# defined. Only ft includes them.
set(FT_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)

# Values go into C string literals holding JSON: anything but plain
# characters becomes "_".
function(ft_build_info_clean out value)
  string(REGEX REPLACE "[^A-Za-z0-9_.,:/+=@ -]" "_" value "${value}")
  string(STRIP "${value}" value)
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

string(TOUPPER "${CMAKE_BUILD_TYPE}" ft_config)
get_directory_property(ft_dir_options DIRECTORY ${CMAKE_SOURCE_DIR} COMPILE_OPTIONS)
string(JOIN " " ft_flags ${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_${ft_config}} ${ft_dir_options})
ft_build_info_clean(FT_BUILD_C_FLAGS "${ft_flags}")
ft_build_info_clean(FT_BUILD_COMPILER "${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION}")
ft_build_info_clean(FT_BUILD_TYPE "${CMAKE_BUILD_TYPE}")
ft_build_info_clean(FT_BUILD_SYSTEM "${CMAKE_SYSTEM_NAME} ${CMAKE_SYSTEM_PROCESSOR}")

# Every FT_* option (BOOL cache entry), as a JSON object's members.
get_cmake_property(ft_cache_vars CACHE_VARIABLES)
list(SORT ft_cache_vars)
set(ft_opts "")
foreach(v IN LISTS ft_cache_vars)
  get_property(ft_type CACHE ${v} PROPERTY TYPE)
  if(v MATCHES "^FT_" AND ft_type STREQUAL "BOOL")
    ft_build_info_clean(ft_val "${${v}}")
    list(APPEND ft_opts "\\\"${v}\\\": \\\"${ft_val}\\\"")
  endif()
endforeach()
string(JOIN ", " FT_BUILD_OPTIONS_JSON ${ft_opts})
configure_file(${CMAKE_CURRENT_LIST_DIR}/ft_build_info.h.in ${FT_GENERATED_DIR}/ft_build_info.h @ONLY)

find_package(Git QUIET)
add_custom_target(ft_build_revision
  COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DOUT=${FT_GENERATED_DIR}/ft_build_revision.h
          -DGIT=${GIT_EXECUTABLE} -P ${CMAKE_CURRENT_LIST_DIR}/ft_git_rev.cmake
  BYPRODUCTS ${FT_GENERATED_DIR}/ft_build_revision.h
  COMMENT "source revision" VERBATIM)
add_dependencies(ft ft_build_revision)
target_include_directories(ft PRIVATE ${FT_GENERATED_DIR})
