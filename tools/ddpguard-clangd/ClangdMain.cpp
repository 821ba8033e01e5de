//===- ClangdMain.cpp - clangd with ddpguard's check linked in ------------===//
//
// Stock clangd plus ddpguard's checks (lib/Tidy/CheckNames.h): their object
// files register them with clang-tidy's module registry, which clangd
// consults for the checks a .clangd file enables.
//
//===----------------------------------------------------------------------===//

namespace clang {
namespace clangd {
int clangdMain(int argc, char *argv[]);
} // namespace clangd
} // namespace clang

int main(int argc, char *argv[]) { return clang::clangd::clangdMain(argc, argv); }
