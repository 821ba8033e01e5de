//===- TranslationUnitAnalysis.h - Findings for one translation unit ------===//
//
// Finds the functions that forward on a DDP object (directly or through
// helpers), summarises helpers lazily, runs the hazard analysis on each such
// function and reports each second forward once, as the failure is on one
// LibTorch version.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FRONTEND_TRANSLATIONUNITANALYSIS_H
#define DDPGUARD_FRONTEND_TRANSLATIONUNITANALYSIS_H

#include "ClangFrontend.h"
#include "Model/HazardAnalysis.h"
#include "llvm/ADT/DenseSet.h"
#include <memory>
#include <optional>
#include <utility>

namespace ddpguard {
namespace clangfe {

struct Finding {
  const clang::FunctionDecl *Function = nullptr;
  const clang::ValueDecl *Object = nullptr;
  /// The forward that broadcasts, the earlier forward whose saved buffers it
  /// overwrites, and the backward that will fail.
  Site Second;
  Site First;
  Site Backward;
  /// Set when the two forwards are different iterations of this loop.
  const clang::Stmt *Loop = nullptr;
  /// The two forwards are two runs of one forward within a single call of
  /// a helper or algorithm that repeats it.
  bool RepeatedInCall = false;
  /// Set when the finding holds only because the first forward's history
  /// may have escaped (Escape) into code we cannot see and come back out of
  /// a call we cannot see (EscapedRead).
  const clang::Expr *Escape = nullptr;
  const clang::Expr *EscapedRead = nullptr;
  model::OriginId FirstOrigin = 0;
  model::OriginId SecondOrigin = 0;
  /// When the object broadcasts before every forward but the rule's
  /// once-per-backward policy would not remove the hazard: a forward that
  /// would still broadcast (the first after a backward) and the backward that
  /// would still fail.
  std::optional<std::pair<Site, Site>> OncePerBackwardFails;
};

/// A write to parameters a forward saved (an optimizer step, or an in-place
/// operation outside one), before a backward through that forward's graph.
struct WriteFinding {
  const clang::FunctionDecl *Function = nullptr;
  /// A step: its optimizer.
  const Optimizer *Opt = nullptr;
  /// An in-place operation outside an optimizer.
  std::optional<ParameterWrite> InPlace;
  /// An in-place operation on a value an operation saved.
  std::optional<TensorWrite> OnValue;
  /// A silent write through `x.data()`, on a module's parameters (Module
  /// set) or on a value an operation saved.
  std::optional<ParameterWrite> ThroughData;
  /// The operation that saved it (value writes): `torch::sigmoid(...)`.
  const clang::Expr *Saver = nullptr;
  /// The backward that fails is the caller's, through the result that the
  /// module's forward returns at Backward.
  bool ThroughResult = false;
  /// The module (or DDP object) whose parameters are written.
  const clang::ValueDecl *Module = nullptr;
  Site Write;
  Site Forward;
  Site Backward;
  /// Set when the backward that fails runs in a later iteration of this
  /// loop than the write.
  const clang::Stmt *Loop = nullptr;
};

class TranslationUnitAnalysis : public SummaryProvider {
public:
  /// Version: the LibTorch the findings are judged by (LibTorchVersion.h).
  TranslationUnitAnalysis(clang::ASTContext &Context, const RuleSet &Rules,
                          bool AssumeModulesHaveBuffers, TorchVersion Version);

  /// A function definition outside system headers that may need analysis.
  void addCandidate(const clang::FunctionDecl *Function);
  /// Findings sorted by the second forward's location.
  std::vector<Finding> run();
  /// Steps that write saved parameters, sorted by the step's location. Only
  /// functions that call step() on an optimizer and reach a backward are
  /// translated, a second time, with plain modules' forwards and the writes.
  std::vector<WriteFinding> runSteps();
  /// In-place writes to saved parameters outside optimizers, sorted by
  /// location; as runSteps, for functions that write parameters in place.
  std::vector<WriteFinding> runParameterWrites();
  /// In-place writes on values that an operation saved, sorted by location;
  /// for functions that write a tensor in place and reach a backward, and
  /// modules' forwards (whose callers backpropagate through the result).
  std::vector<WriteFinding> runValueWrites();
  /// Writes that leave the version counters as they were (LibTorch's SGD
  /// steps, in-place writes through `x.data()`) on what a forward or an
  /// operation saved, sorted by location; the other runs never report them.
  std::vector<WriteFinding> runSilentWrites();

  const Summary *summaryFor(const clang::FunctionDecl *Callee) override;
  bool reachesOutOfSight(const clang::FunctionDecl *Callee) override;
  DDPObjects &objects() { return Objects; }
  ModuleCalls &modules() { return Modules; }
  TorchVersion version() const { return Version; }

private:
  struct ScanInfo {
    bool DirectForward = false;
    bool DirectBackward = false;
    /// Calls a method named step (an optimizer's, perhaps).
    bool DirectStep = false;
    /// Writes a module's parameters in place (ModuleCalls).
    bool DirectParameterWrite = false;
    /// Writes a tensor in place.
    bool DirectTensorWrite = false;
    /// Calls a method named step, or writes in place through `x.data()`.
    bool DirectSilentWrite = false;
    /// Calls a function whose body is not visible, or names a member or a
    /// mutable global.
    bool DirectOutOfSight = false;
    llvm::SmallVector<const clang::FunctionDecl *, 4> Callees;
  };
  struct Analysed {
    TranslatedFunction Translation;
    model::AnalysisResult Result;
  };

  const ScanInfo &scan(const clang::FunctionDecl *Function);
  bool forwardsTransitively(const clang::FunctionDecl *Function);
  bool needsSummary(const clang::FunctionDecl *Function);
  const Analysed &analyse(const clang::FunctionDecl *Function);
  Summary summarise(const Analysed &A);
  void report(const Analysed &A, std::vector<Finding> &Findings);
  /// Marks the findings that hold only through escaped values.
  void noteEscapes(const Analysed &A, llvm::MutableArrayRef<Finding> Findings);
  /// Marks the findings that the once-per-backward policy would not remove.
  void noteOncePerBackward(const Analysed &A,
                           llvm::MutableArrayRef<Finding> Findings);
  /// The candidates and the lambdas written in them.
  std::vector<const clang::FunctionDecl *> functionsToAnalyse() const;
  /// The kinds of write the write checks report.
  enum class WriteCheck { Step, Parameter, Value, Silent };
  /// The findings of one kind of write, in the functions that Writes (of a
  /// ScanInfo) selects and that reach a backward.
  std::vector<WriteFinding> runWrites(WriteCheck Check, bool ScanInfo::*Writes);
  void reportWrites(const TranslatedFunction &T,
                    const model::AnalysisResult &Result, WriteCheck Check,
                    std::vector<WriteFinding> &Findings);
  const clang::Stmt *commonLoop(const clang::FunctionDecl *Function,
                                clang::SourceLocation A,
                                clang::SourceLocation B);

  clang::ASTContext &Context;
  TorchVersion Version;
  DDPObjects Objects;
  ModuleCalls Modules{Objects};
  std::vector<const clang::FunctionDecl *> Candidates;
  llvm::DenseMap<const clang::FunctionDecl *, ScanInfo> Scans;
  llvm::DenseMap<const clang::FunctionDecl *, bool> Forwards;
  llvm::DenseMap<const clang::FunctionDecl *, bool> NeedsSummary;
  llvm::DenseMap<const clang::FunctionDecl *, bool> OutOfSight;
  llvm::DenseMap<const clang::FunctionDecl *, std::unique_ptr<Analysed>>
      Analyses;
  llvm::DenseMap<const clang::FunctionDecl *, std::unique_ptr<Summary>>
      Summaries;
  llvm::DenseSet<const clang::FunctionDecl *> InProgress;
  /// Per function: its loop statements, outside-in.
  llvm::DenseMap<const clang::FunctionDecl *,
                 std::vector<const clang::Stmt *>>
      Loops;
};

} // namespace clangfe
} // namespace ddpguard

#endif
