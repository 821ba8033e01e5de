//===- DDPGuardTidyModule.cpp - Registers the ddpguard checks -------------===//

#include "MultipleForwardBeforeBackwardCheck.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"

namespace ddpguard {
namespace tidy {

class DDPGuardModule : public clang::tidy::ClangTidyModule {
public:
  void addCheckFactories(
      clang::tidy::ClangTidyCheckFactories &CheckFactories) override {
    CheckFactories.registerCheck<MultipleForwardBeforeBackwardCheck>(
        "ddp-multiple-forward-before-backward");
  }
};

} // namespace tidy
} // namespace ddpguard

static clang::tidy::ClangTidyModuleRegistry::Add<ddpguard::tidy::DDPGuardModule>
    X("ddpguard-module", "Checks for DDP buffer-broadcast hazards.");
