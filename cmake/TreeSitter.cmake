# tree-sitter's C runtime and Python grammar, built from the pinned sdists
# that scripts/setup.sh downloads into the wheelhouse
# (scripts/requirements-tree-sitter.txt): the Python frontend's parser
# (docs/design.md, "The Python frontend's parser").

set(DDPGUARD_WHEELHOUSE "" CACHE PATH
  "Where scripts/setup.sh keeps downloads (default: ~/.cache/ddpguard/wheels)")

# Downloads the pinned sdists into the wheelhouse when one is missing, so a
# build (pip install . too) needs no scripts/setup.sh first: with pip, which
# checks the hashes (and the caller checks them again). Under pip's build
# isolation PYTHONPATH hides pip from the interpreter that runs the build.
function(ddpguard_fetch_tree_sitter_sources wheelhouse requirements pins)
  foreach(pin IN LISTS pins)
    string(REGEX MATCH "^([a-z-]+)==([0-9.]+)" _ "${pin}")
    string(REPLACE "-" "_" underscored "${CMAKE_MATCH_1}")
    if(NOT EXISTS "${wheelhouse}/${CMAKE_MATCH_1}-${CMAKE_MATCH_2}.tar.gz" AND
       NOT EXISTS "${wheelhouse}/${underscored}-${CMAKE_MATCH_2}.tar.gz")
      set(missing TRUE)
    endif()
  endforeach()
  if(NOT missing)
    return()
  endif()
  # pip install's interpreter, else the project's .venv, else the system's.
  set(python "${Python_EXECUTABLE}")
  if(NOT python AND EXISTS "${DDPGUARD_PYTHON}")
    set(python "${DDPGUARD_PYTHON}")
  endif()
  if(NOT python)
    find_program(python NAMES python3 python)
  endif()
  message(STATUS "ddpguard: downloading the tree-sitter sources into ${wheelhouse}")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env --unset=PYTHONPATH --unset=PYTHONNOUSERSITE
      "${python}" -m pip download -q --no-binary :all: --no-deps --require-hashes
      -d "${wheelhouse}" -r "${requirements}"
    RESULT_VARIABLE failed)
  if(failed)
    message(WARNING "ddpguard: pip download of ${requirements} failed")
  endif()
endfunction()

function(ddpguard_add_tree_sitter target)
  set(wheelhouse "${DDPGUARD_WHEELHOUSE}")
  if(NOT wheelhouse)
    if(DEFINED ENV{DDPGUARD_WHEELHOUSE})
      set(wheelhouse "$ENV{DDPGUARD_WHEELHOUSE}")
    elseif(DEFINED ENV{XDG_CACHE_HOME})
      set(wheelhouse "$ENV{XDG_CACHE_HOME}/ddpguard/wheels")
    else()
      set(wheelhouse "$ENV{HOME}/.cache/ddpguard/wheels")
    endif()
  endif()
  set(requirements "${PROJECT_SOURCE_DIR}/scripts/requirements-tree-sitter.txt")
  file(STRINGS "${requirements}" pins REGEX "^[a-z-]+==")
  ddpguard_fetch_tree_sitter_sources("${wheelhouse}" "${requirements}" "${pins}")
  set(root "${CMAKE_CURRENT_BINARY_DIR}/tree-sitter")
  foreach(pin IN LISTS pins)
    string(REGEX MATCH "^([a-z-]+)==([0-9.]+) --hash=sha256:([0-9a-f]+)" _ "${pin}")
    set(name "${CMAKE_MATCH_1}")
    set(version "${CMAKE_MATCH_2}")
    set(hash "${CMAKE_MATCH_3}")
    string(REPLACE "-" "_" underscored "${name}")
    set(archive "")
    foreach(candidate "${name}-${version}.tar.gz" "${underscored}-${version}.tar.gz")
      if(EXISTS "${wheelhouse}/${candidate}")
        set(archive "${wheelhouse}/${candidate}")
      endif()
    endforeach()
    if(NOT archive)
      message(FATAL_ERROR "ddpguard: the ${name} ${version} sources are not in "
        "${wheelhouse} and could not be downloaded: run scripts/setup.sh (or set DDPGUARD_WHEELHOUSE)")
    endif()
    file(SHA256 "${archive}" actual)
    if(NOT actual STREQUAL hash)
      message(FATAL_ERROR "ddpguard: ${archive} has sha256 ${actual}, "
        "scripts/requirements-tree-sitter.txt pins ${hash}")
    endif()
    # The version is in the name and the archive's hash is checked, so an
    # extracted folder is always the right one.
    set(${underscored}_dir "${root}/${name}-${version}")
    if(NOT EXISTS "${${underscored}_dir}/.extracted")
      file(REMOVE_RECURSE "${${underscored}_dir}")
      file(ARCHIVE_EXTRACT INPUT "${archive}" DESTINATION "${${underscored}_dir}")
      file(TOUCH "${${underscored}_dir}/.extracted")
    endif()
    # An sdist holds one folder, <name>-<version>, spelt either way.
    file(GLOB ${underscored}_dir LIST_DIRECTORIES true
      "${${underscored}_dir}/*-${version}")
  endforeach()
  set(runtime "${tree_sitter_dir}/tree_sitter/core/lib")
  set(grammar "${tree_sitter_python_dir}/src")
  # A grammar includes tree_sitter/parser.h and tree_sitter/array.h, which
  # the tree-sitter CLI copies from the runtime's lib/src when it generates
  # a grammar; the grammar's sdist leaves them out.
  file(COPY "${runtime}/src/parser.h" "${runtime}/src/array.h"
    "${runtime}/src/alloc.h" "${runtime}/src/ts_assert.h"
    DESTINATION "${root}/grammar-include/tree_sitter")
  add_library(${target} STATIC
    "${runtime}/src/lib.c" "${grammar}/parser.c" "${grammar}/scanner.c")
  target_include_directories(${target} SYSTEM PUBLIC "${runtime}/include")
  target_include_directories(${target} PRIVATE "${runtime}/src" "${grammar}"
    "${root}/grammar-include")
  set_target_properties(${target} PROPERTIES C_STANDARD 11
    POSITION_INDEPENDENT_CODE ON)
  # Generated and third-party C: its warnings are not ours to fix.
  target_compile_options(${target} PRIVATE -w)
endfunction()
