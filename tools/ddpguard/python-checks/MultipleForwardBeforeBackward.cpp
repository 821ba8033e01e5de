//===- MultipleForwardBeforeBackward.cpp ----------------------------------===//
//
// ddp-multiple-forward-before-backward: CheckResult's Findings, as the CLI's
// findings.
//
//===----------------------------------------------------------------------===//

#include "PythonCheck.h"
#include "Tidy/MultipleForwardBeforeBackwardCheck.h"
#include "llvm/ADT/STLExtras.h"

using namespace llvm;
using clang::tidy::ClangTidyError;

namespace ddpguard {

/// The rule the Python frontend's findings come from.
static const char PyTorchDDP[] = "torch.nn.parallel.DistributedDataParallel";

void python_checks::renderMultipleForwardBeforeBackward(
    const PythonCheckContext &C) {
  StringRef Check = checks::MultipleForwardBeforeBackward;
  const std::string &File = C.File;
  const python::CheckResult &Result = C.Result;
  for (const python::Finding &F : Result.Findings) {
    if (!reported(C, Check, F.Second.Offset))
      continue;
    Finding E(ClangTidyError(Check, ClangTidyError::Warning, "", false));
    E.Message = message(
        "forward call on DDP-wrapped '" + F.Object +
            "' before the backward of the forward at line " +
            std::to_string(F.First.Line) +
            ": DDP broadcasts buffers before every forward and overwrites "
            "the buffers that forward saved for backward",
        File, F.Second.Offset);
    auto Note = [&](const std::string &Message, const python::Position &At,
                    const std::string &In, NoteKind Kind = NoteKind::Place,
                    NoteRole Role = NoteRole::None) {
      E.addNote(message(Message, In, At.Offset), Kind, Role);
    };
    if (F.SameForwardInALoop)
      Note("the same forward ran in an earlier iteration of a loop; its "
           "saved buffers are overwritten",
           F.Second, File, NoteKind::Place, NoteRole::EarlierForward);
    else if (F.FirstBypasses)
      Note("earlier forward on '" + F.Object + ".module' is here, past "
               "DDP: it saved the buffers without a broadcast, and they "
               "are overwritten",
           F.First, File, NoteKind::Place, NoteRole::EarlierForward);
    else
      Note("earlier forward on '" + F.Object +
               "' is here; its saved buffers are overwritten",
           F.First, File, NoteKind::Place, NoteRole::EarlierForward);
    Note("the backward that fails is here", F.Backward, File);
    const WrapperRule *Rule = C.Rules.find(PyTorchDDP);
    Note("'" + F.Object + "' is constructed here and broadcasts buffers "
             "before every forward ('" +
             Rule->Broadcast.nameAt(C.Judged.Version) +
             "' is not set to False)",
         F.Construction, F.ConstructionFile);
    if (!F.BuffersAssumption.empty())
      Note("assuming the forward saves a buffer for backward: " +
               F.BuffersAssumption +
               " (assume-modules-have-buffers = false in [tool.ddpguard] "
               "reports no such module)",
           F.Construction, F.ConstructionFile, NoteKind::Assumption);
    Note("judged by " + C.Judged.Description, F.Second, File,
         NoteKind::JudgedBy);
    if (const std::optional<TorchVersion> &From =
            Rule->PreservesVersionCountersFrom)
      Note("or upgrade to torch " + From->str() +
               " or later: there DistributedDataParallel puts the buffers' "
               "version counters back after its broadcast, and these "
               "forwards no longer fail",
           F.Second, File, NoteKind::Alternative);
    auto Apply = [&](const python::Edit &Fix, const std::string &In) {
      cantFail(E.Message.Fix[In].add(clang::tooling::Replacement(
          In, Fix.Offset, Fix.Length, Fix.Text)));
    };
    std::string Behaviour =
        ": each rank then keeps its own running statistics, no longer "
        "rank 0's (BatchNorm's running_mean and running_var)";
    std::string Broadcast =
        tidy::MultipleForwardBeforeBackwardCheck::broadcastFixNote(
            F.BroadcastKeyword) +
        Behaviour;
    // Wrapping the first of three forwards leaves the third broadcasting.
    std::string NoSyncWithheld = F.NoSyncWithheld;
    if (Result.Findings.size() > 1 &&
        llvm::count_if(Result.Findings, [&](const python::Finding &Other) {
          return Other.Function == F.Function && Other.Object == F.Object;
        }) > 1)
      NoSyncWithheld = "more than two forwards on '" + F.Object +
                       "' run before the backward";
    std::string NoSync = "runs the first forward inside 'with " + F.Object +
                         ".no_sync():', which still broadcasts rank 0's "
                         "buffers; the later forwards before the backward "
                         "then do not, and the gradients and rank 0's "
                         "parameters and buffers are those PyTorch's DDP "
                         "computes from 2.12.1";
    switch (C.FixMode) {
    case PythonFixMode::Broadcast:
      if (F.BroadcastWithheld.empty()) {
        Apply(F.BroadcastFix, F.ConstructionFile);
        E.FixTitle =
            "Set " + F.BroadcastKeyword + "=False at the DDP construction";
        E.Applicability = FixApplicability::Unsafe;
        Note(Broadcast, F.Second, File, NoteKind::FixEffect);
      } else {
        Note("no fix is offered: " + F.BroadcastWithheld + Behaviour,
             F.Second, File, NoteKind::NoFix);
      }
      if (NoSyncWithheld.empty())
        Note("or keep the buffers in sync: --fix-mode=once-per-backward " +
                 NoSync,
             F.Second, File, NoteKind::Alternative);
      break;
    case PythonFixMode::NoSync:
      if (NoSyncWithheld.empty()) {
        Apply(F.NoSyncFix, File);
        E.FixTitle = "Run the first forward inside " + F.Object +
                     ".no_sync()";
        E.Applicability = FixApplicability::Safe;
        Note("the fix " + NoSync, F.Second, File, NoteKind::FixEffect);
      } else {
        Note("cannot run the first forward inside no_sync(): " +
                 NoSyncWithheld,
             F.Second, File, NoteKind::NoFix);
      }
      Note("or set '" + F.BroadcastKeyword + "' to false (--fix-mode=" +
               "broadcast), which changes behaviour" + Behaviour,
           F.Second, File, NoteKind::Alternative);
      break;
    case PythonFixMode::None:
      Note("fusing the forwards is for C++ only: use --fix-mode=broadcast "
           "or --fix-mode=once-per-backward",
           F.Second, File, NoteKind::NoFix);
      break;
    }
    C.Findings.push_back(std::move(E));
  }
}

} // namespace ddpguard
