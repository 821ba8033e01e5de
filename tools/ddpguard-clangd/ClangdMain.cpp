//===- ClangdMain.cpp - clangd with ddpguard's check linked in ------------===//
//
// Stock clangd plus the ddp-multiple-forward-before-backward check: the
// check's object files register it with clang-tidy's module registry, which
// clangd consults for the checks a .clangd file enables.
//
//===----------------------------------------------------------------------===//

namespace clang {
namespace clangd {
int clangdMain(int argc, char *argv[]);
} // namespace clangd
} // namespace clang

int main(int argc, char *argv[]) { return clang::clangd::clangdMain(argc, argv); }
