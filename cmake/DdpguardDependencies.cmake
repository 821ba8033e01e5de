# Finds the dependencies of each part; a missing one stops configure with one
# line naming the Debian package and the command that installs it.

# The leading space keeps CMake from wrapping the line. pip install builds
# through CMake too, so the line says that building needs these packages.
function(ddpguard_require found package what)
  if(NOT ${found})
    message(FATAL_ERROR
      " ddpguard: ${what} not found: building ddpguard (pip install too) needs it: "
      "install the Debian package '${package}' (scripts/setup.sh, or: apt-get install ${package})")
  endif()
endfunction()

macro(ddpguard_find_checker_dependencies)
  # LLVMConfigVersion.cmake accepts only an exact major.minor, so ask for the
  # LLVM 19 tree by path and check the major version ourselves.
  find_package(LLVM CONFIG QUIET
    PATHS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
  if(LLVM_FOUND AND NOT LLVM_VERSION_MAJOR EQUAL 19)
    set(LLVM_FOUND FALSE)
  endif()
  ddpguard_require(LLVM_FOUND llvm-19-dev "LLVM 19 (LLVMConfig.cmake)")
  find_package(Clang CONFIG QUIET PATHS "${LLVM_DIR}/../clang" NO_DEFAULT_PATH)
  ddpguard_require(Clang_FOUND libclang-19-dev "Clang 19 (ClangConfig.cmake)")
  # The CLI reads Python projects' [tool.ddpguard] tables (PythonConfig.h).
  find_package(tomlplusplus 3 CONFIG QUIET)
  ddpguard_require(tomlplusplus_FOUND libtomlplusplus-dev "toml++ 3 (tomlplusplusConfig.cmake)")
  find_program(DDPGUARD_CLANG_TIDY clang-tidy-19 HINTS "${LLVM_TOOLS_BINARY_DIR}")
  ddpguard_require(DDPGUARD_CLANG_TIDY clang-tidy-19 "clang-tidy-19")
  find_program(DDPGUARD_CLANG clang++-19 HINTS "${LLVM_TOOLS_BINARY_DIR}")
  ddpguard_require(DDPGUARD_CLANG clang-19 "clang++-19")
  # tree-sitter is C: the fuzz configuration compiles it with the same Clang.
  find_program(DDPGUARD_CLANG_C clang-19 HINTS "${LLVM_TOOLS_BINARY_DIR}")
  ddpguard_require(DDPGUARD_CLANG_C clang-19 "clang-19")
  # Standalone LibTooling binaries need clang's own resource headers (stddef.h).
  execute_process(COMMAND "${DDPGUARD_CLANG}" -print-resource-dir
    OUTPUT_VARIABLE DDPGUARD_CLANG_RESOURCE_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(DDPGUARD_CLANG_TIDY_INCLUDE_DIR "${LLVM_INCLUDE_DIRS}")
  if(NOT EXISTS "${LLVM_INCLUDE_DIRS}/clang-tidy/ClangTidyCheck.h")
    ddpguard_require(FALSE libclang-19-dev "the clang-tidy headers (clang-tidy/ClangTidyCheck.h)")
  endif()
endmacro()

# LibTorch, in this order: what the user points at (Torch_DIR or
# CMAKE_PREFIX_PATH, e.g. an unpacked LibTorch zip), else the torch wheel in
# DDPGUARD_PYTHON's environment (scripts/setup.sh makes .venv with torch 2.11).
set(DDPGUARD_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
  "Python whose torch wheel provides LibTorch when none is given explicitly")
macro(ddpguard_find_torch)
  if(NOT Torch_DIR AND NOT CMAKE_PREFIX_PATH AND EXISTS "${DDPGUARD_PYTHON}")
    execute_process(
      COMMAND "${DDPGUARD_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE DDPGUARD_TORCH_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE DDPGUARD_TORCH_QUERY ERROR_QUIET)
    if(DDPGUARD_TORCH_QUERY EQUAL 0)
      set(Torch_DIR "${DDPGUARD_TORCH_PREFIX}/Torch" CACHE PATH "LibTorch's CMake config" FORCE)
      set(Caffe2_DIR "${DDPGUARD_TORCH_PREFIX}/Caffe2" CACHE PATH "LibTorch's Caffe2 config" FORCE)
    endif()
  endif()
  # TorchConfig finds its libraries with find_library(... PATHS <its lib>),
  # which searches the system first: with Debian's libtorch-dev installed, a
  # wheel's headers would be linked against /usr/lib's LibTorch 1.13.
  # A CUDA build of LibTorch looks for the toolkit again (FindCUDA).
  if(NOT CUDA_TOOLKIT_ROOT_DIR AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CUDA_TOOLKIT_ROOT_DIR /usr/local/cuda)
  endif()
  if(NOT CMAKE_CUDA_COMPILER AND CUDA_TOOLKIT_ROOT_DIR)
    set(CMAKE_CUDA_COMPILER "${CUDA_TOOLKIT_ROOT_DIR}/bin/nvcc")
  endif()
  # CMake 3.25 cannot probe CUDA 13's default architecture; Hopper (H100/H200)
  # and Ampere unless the user chooses.
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures")
  endif()
  set(CMAKE_FIND_USE_CMAKE_SYSTEM_PATH FALSE)
  set(CMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH FALSE)
  find_package(Torch CONFIG QUIET)
  unset(CMAKE_FIND_USE_CMAKE_SYSTEM_PATH)
  unset(CMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH)
endmacro()

macro(ddpguard_find_runtime_dependencies)
  ddpguard_find_torch()
  if(NOT Torch_FOUND)
    message(FATAL_ERROR
      "ddpguard: LibTorch not found: run scripts/setup.sh (torch==2.11.0 in "
      ".venv), or point CMake at a LibTorch 2.x with -DCMAKE_PREFIX_PATH=/path/to/libtorch")
  endif()
  if(Torch_VERSION VERSION_LESS 2.0)
    message(FATAL_ERROR "ddpguard: the runtime needs LibTorch 2.x; found ${Torch_VERSION} at ${Torch_DIR}")
  endif()
  if(Torch_VERSION VERSION_LESS 2.11 OR Torch_VERSION VERSION_GREATER_EQUAL 2.16)
    message(WARNING "ddpguard: the runtime supports LibTorch 2.11.0 to 2.15.0; "
      "found ${Torch_VERSION} at ${Torch_DIR}")
  endif()
  # LibTorch 2.14 requires C++20 (ATen.h's #error; 2.15's TorchConfig adds
  # cxx_std_20 to torch's interface); older ones build as C++17 like the rest.
  if(Torch_VERSION VERSION_GREATER_EQUAL 2.14 AND CMAKE_CXX_STANDARD LESS 20)
    set(CMAKE_CXX_STANDARD 20)
  endif()
  set(DDPGUARD_TORCH_CXX_STANDARD ${CMAKE_CXX_STANDARD})
  message(STATUS "ddpguard: LibTorch ${Torch_VERSION} from ${Torch_DIR} (C++${CMAKE_CXX_STANDARD})")
endmacro()
