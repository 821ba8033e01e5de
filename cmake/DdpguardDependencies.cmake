# Finds the dependencies of each part; a missing one stops configure with one
# line naming the Debian package and the command that installs it.

function(ddpguard_require found package what)
  if(NOT ${found})
    message(FATAL_ERROR
      "ddpguard: ${what} not found: install the Debian package '${package}' "
      "(scripts/setup.sh, or: apt-get install ${package})")
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
  find_program(DDPGUARD_CLANG_TIDY clang-tidy-19 HINTS "${LLVM_TOOLS_BINARY_DIR}")
  ddpguard_require(DDPGUARD_CLANG_TIDY clang-tidy-19 "clang-tidy-19")
  find_program(DDPGUARD_CLANG clang++-19 HINTS "${LLVM_TOOLS_BINARY_DIR}")
  ddpguard_require(DDPGUARD_CLANG clang-19 "clang++-19")
  # Standalone LibTooling binaries need clang's own resource headers (stddef.h).
  execute_process(COMMAND "${DDPGUARD_CLANG}" -print-resource-dir
    OUTPUT_VARIABLE DDPGUARD_CLANG_RESOURCE_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(DDPGUARD_CLANG_TIDY_INCLUDE_DIR "${LLVM_INCLUDE_DIRS}")
  if(NOT EXISTS "${LLVM_INCLUDE_DIRS}/clang-tidy/ClangTidyCheck.h")
    ddpguard_require(FALSE libclang-19-dev "the clang-tidy headers (clang-tidy/ClangTidyCheck.h)")
  endif()
endmacro()

macro(ddpguard_find_runtime_dependencies)
  find_package(Torch CONFIG QUIET)
  ddpguard_require(Torch_FOUND libtorch-dev "LibTorch (TorchConfig.cmake)")
endmacro()
