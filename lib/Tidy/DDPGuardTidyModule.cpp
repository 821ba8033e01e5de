//===- DDPGuardTidyModule.cpp - Registers the ddpguard checks -------------===//

#include "CheckNames.h"
#include "InPlaceWriteBeforeBackwardCheck.h"
#include "MultipleForwardBeforeBackwardCheck.h"
#include "OptimizerStepBeforeBackwardCheck.h"
#include "ParameterWriteBeforeBackwardCheck.h"
#include "SilentWriteBeforeBackwardCheck.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"

namespace ddpguard {
namespace tidy {

class DDPGuardModule : public clang::tidy::ClangTidyModule {
public:
  void addCheckFactories(
      clang::tidy::ClangTidyCheckFactories &CheckFactories) override {
    CheckFactories.registerCheck<MultipleForwardBeforeBackwardCheck>(
        checks::MultipleForwardBeforeBackward);
    CheckFactories.registerCheck<OptimizerStepBeforeBackwardCheck>(
        checks::OptimizerStepBeforeBackward);
    CheckFactories.registerCheck<ParameterWriteBeforeBackwardCheck>(
        checks::ParameterWriteBeforeBackward);
    CheckFactories.registerCheck<InPlaceWriteBeforeBackwardCheck>(
        checks::InPlaceWriteBeforeBackward);
    CheckFactories.registerCheck<SilentWriteBeforeBackwardCheck>(
        checks::SilentWriteBeforeBackward);
  }
};

} // namespace tidy
} // namespace ddpguard

static clang::tidy::ClangTidyModuleRegistry::Add<ddpguard::tidy::DDPGuardModule>
    X("ddpguard-module", "Checks for tensors a forward saved for backward and "
                         "a write overwrites: DDP buffer broadcasts, "
                         "optimizer steps, in-place writes to parameters "
                         "and to saved values.");
