//===- PythonFrontend.h - Python training scripts as event graphs ---------===//
//
// Reads a Python file with tree-sitter's Python grammar (docs/design.md, "The
// Python frontend's parser"), lowers each function, method and the module's
// own code to an EventGraph and runs the same HazardAnalysis as the Clang
// frontend. DDP objects are what the rule set's Python wrappers construct
// (rewrite-rules/ddpguard.yaml: torch.nn.parallel.DistributedDataParallel),
// under any import alias, bound to a local or global name, to self.<attr>
// in a class, returned by a factory function of the file, or passed to a
// parameter of a function of the file. Whether the wrapped module has
// buffers is followed through the file: torch.nn layers (batch norm keeps
// running statistics), containers, torchvision's builders, classes of the
// file (register_buffer, module attributes, bases); anything else is assumed
// to have them, and the finding says why.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_PYTHONFRONTEND_PYTHONFRONTEND_H
#define DDPGUARD_PYTHONFRONTEND_PYTHONFRONTEND_H

#include "Rules/RuleSet.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>
#include <vector>

namespace ddpguard {
namespace python {

/// 1-based line and column (in bytes) of a point in the source, and its
/// byte offset.
struct Position {
  unsigned Line = 0;
  unsigned Column = 0;
  unsigned Offset = 0;
  friend bool operator<(const Position &A, const Position &B) {
    return A.Line < B.Line || (A.Line == B.Line && A.Column < B.Column);
  }
  friend bool operator==(const Position &A, const Position &B) {
    return A.Line == B.Line && A.Column == B.Column;
  }
};

/// Replace Length bytes at Offset with Text.
struct Edit {
  unsigned Offset = 0;
  unsigned Length = 0;
  std::string Text;
};

/// A forward on a DDP object whose buffer broadcast overwrites what an
/// earlier forward on it saved, before a backward through that forward.
struct Finding {
  /// The DDP object as the code names it: "model", "self.encoder".
  std::string Object;
  /// The function holding the forwards, or "<module>".
  std::string Function;
  Position Second;
  Position First;
  Position Backward;
  /// Where the object was constructed (DistributedDataParallel(...)), and
  /// in which file (another file of the run when a factory or a helper of
  /// it is followed); BroadcastFix edits that file.
  Position Construction;
  std::string ConstructionFile;
  /// Why the wrapped module is assumed to have buffers (the checker could
  /// not follow it); empty when the file shows that it has them.
  std::string BuffersAssumption;
  /// The keyword that turns the broadcast off, as the version spells it
  /// ("broadcast_buffers", "forward_sync_buffers" from 2.13), and the edit
  /// of the construction that sets it to False.
  std::string BroadcastKeyword;
  Edit BroadcastFix;
  /// Why no edit turns the broadcast off (then BroadcastFix is empty).
  std::string BroadcastWithheld;
  /// The two forwards are one call in two iterations of a loop.
  bool SameForwardInALoop = false;
  /// The earlier forward ran on the wrapped module (model.module(x)): it
  /// saved the buffers without a broadcast.
  bool FirstBypasses = false;
  /// The sync-preserving fix (--fix-mode=once-per-backward): the first
  /// forward's statement run inside `with <Object>.no_sync():`, so that the
  /// later forwards do not broadcast and each step still starts from rank
  /// 0's buffers; or why it would change what training computes.
  Edit NoSyncFix;
  std::string NoSyncWithheld;
};

struct CheckOptions {
  /// The PyTorch version the findings are judged by.
  TorchVersion Version = OldestSupportedTorch;
  /// A wrapped module the file does not show to have or lack buffers is
  /// assumed to have them (the finding says why); false: not reported.
  bool AssumeModulesHaveBuffers = true;
};

/// An optimizer step that writes parameters a forward saved for backward,
/// before a backward through that forward (optimizer-step-before-backward).
struct StepFinding {
  /// The optimizer as the code names it, its class ("torch.optim.Adam") and
  /// the module whose parameters it steps.
  std::string Optimizer;
  std::string OptimizerClass;
  std::string Module;
  Position Step;
  Position Forward;
  Position Backward;
  /// The class is not among the measured ones: its step is assumed to bump
  /// the parameters' version counters.
  bool Assumed = false;
};

/// An in-place write on a tensor that an operation saved for backward,
/// before a backward through that operation (inplace-write-before-backward).
struct ValueWriteFinding {
  /// The write ("mul_", "+=", "h[0] = 0"), the tensor it writes and the
  /// operation that saved it, as the code spells them.
  std::string Operation;
  std::string Tensor;
  std::string Saver;
  Position Write;
  Position Saved;
  /// The backward that fails; with ThroughResult, the `return` of a module's
  /// forward, whose caller backpropagates through the value it returns.
  Position Backward;
  bool ThroughResult = false;
  /// Recurrent state: the forward's parameter ("memory") through which the
  /// written tensor comes back from the previous call, whose saver saved it.
  std::string CarriedState;
  /// The out-of-place spelling (y = y.mul(2), h = h + y), or why none keeps
  /// the meaning (FixWithheld, then Fix is empty).
  std::vector<Edit> Fix;
  std::string FixWithheld;
};

/// A write that leaves autograd's version counters as they were, on a
/// tensor a forward saved for backward, before a backward through it
/// (silent-write-before-backward): the backward raises nothing and computes
/// gradients from values the forward did not see.
struct SilentWriteFinding {
  enum class Way {
    /// A step of an optimizer built with fused=True.
    FusedStep,
    /// An in-place operation on a tensor's .data.
    Data,
    /// An in-place operation under
    /// torch.autograd._unsafe_preserve_version_counter.
    PreservedVersionCounter,
    /// A step that bumps the version counters, of parameters a forward
    /// under activation checkpointing saved: the backward recomputes that
    /// forward from the written parameters and checks no version counter.
    CheckpointedStep,
  };
  Way WrittenBy = Way::Data;
  /// The write ("opt_d.step()", "p.data.add_"), the tensor it writes ("p",
  /// "gate") as the code spells them, and the module whose parameters it
  /// writes ("D"), if any.
  std::string Operation;
  std::string Tensor;
  std::string Module;
  /// The operation that saved the tensor ("torch.sigmoid(fc(x))"); empty
  /// where a module's forward saved it.
  std::string Saver;
  Position Write;
  Position Saved;
  /// With ThroughResult, the `return` of a module's forward, whose caller
  /// backpropagates through the value it returns.
  Position Backward;
  bool ThroughResult = false;
  /// Why no edit keeps what training computes: no fix is offered.
  std::string FixWithheld;
};

/// The deepest syntax tree the checker analyses, in levels of tree-sitter's
/// nodes, and the stack its analysis runs on: its walks recurse over the
/// tree. Measured with the CLI under `ulimit -s`: 990 levels of the costliest
/// nesting (nested calls, method chains) needed between 1 and 2 MiB, so this
/// depth needs less than 10 MiB; every kind at 4,990 levels is checked.
/// CPython compiles sums of 3,000 terms, which are 3,000 levels deep.
constexpr unsigned MaxNestingDepth = 5000;
constexpr unsigned AnalysisStackSize = 64u << 20;

struct CheckResult {
  /// Sorted by the second forward's position.
  std::vector<Finding> Findings;
  /// Sorted by the step's position.
  std::vector<StepFinding> Steps;
  /// Sorted by the write's position.
  std::vector<ValueWriteFinding> ValueWrites;
  /// Sorted by the write's position.
  std::vector<SilentWriteFinding> SilentWrites;
  /// Where the parser met text it could not read. The code around it is
  /// still checked, as an editor needs on half-typed code.
  std::vector<Position> SyntaxErrors;
  /// Where the tree first nests deeper than MaxNestingDepth: the file is
  /// not analysed (no findings, no syntax errors); the run's other files
  /// are.
  std::optional<Position> TooDeep;
};

/// One file of a run: its absolute path (what names its module for the
/// imports of the other files), its text, and the options it is judged by.
struct SourceFile {
  std::string Path;
  llvm::StringRef Source;
  CheckOptions Options;
  /// Read only for what the run's other files import from it or pass to
  /// it: its own result is empty.
  bool Context = false;
  /// The folders its project's absolute imports are resolved from (the
  /// project root, its src/), after the file's own folder.
  std::vector<std::string> SourceRoots;
};

/// Checks the files of one run together: a factory, a helper or a module
/// class one file imports from another (`from models import build`,
/// `from .train import step`, `import utils; utils.step(...)`) is followed
/// there, and a DDP object passed to a helper of another file binds its
/// parameter. One result per file, in order.
std::vector<CheckResult> checkSources(llvm::ArrayRef<SourceFile> Files,
                                      const RuleSet &Rules);

/// One file on its own.
CheckResult checkSource(llvm::StringRef Source, const RuleSet &Rules,
                        const CheckOptions &Options);

} // namespace python
} // namespace ddpguard

#endif
