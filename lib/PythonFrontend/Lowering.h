//===- Lowering.h - One scope of a Python file to an EventGraph ----------===//
//
// Statements to blocks (if, for, while, try, with, break, continue,
// return), expressions to the values their history comes from; forwards,
// optimizer steps, backwards, operations that save tensors and in-place
// writes to events of the model.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_PYTHONFRONTEND_LOWERING_H
#define DDPGUARD_PYTHONFRONTEND_LOWERING_H

#include "Frontend.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace ddpguard {
namespace python {
namespace detail {

using namespace model;
using llvm::StringRef;

/// Lowers one scope to an EventGraph.
class Lowering {
public:
  Lowering(Frontend &F, Scope &S) : F(F), S(S) {}

  void run();

  EventGraph Graph;
  std::vector<Position> Sites;
  /// The statement of a block (or of the module) a site is in.
  struct Place {
    TSNode Statement;
    TSNode Block;
  };
  std::vector<Place> SitePlaces;
  Place Here;
  /// The name each object was bound by, and its binding, per object.
  std::vector<std::string> ObjectNames;
  std::vector<Binding> ObjectBindings;
  /// The optimizer steps, by site: the optimizer as written and what it
  /// steps.
  std::map<SiteId, std::pair<std::string, Frontend::OptimizerInfo>> Steps;
  /// In-place writes on values, by site.
  struct ValueWrite {
    enum Form { Method, Augmented, Subscript, Function, Module };
    Form WriteForm;
    /// The call, augmented assignment or assignment that writes.
    TSNode Node;
    /// The tensor it writes, as the code names it.
    TSNode Tensor;
    std::string Operation;
  };
  std::map<SiteId, ValueWrite> ValueWrites;
  /// Writes that leave the version counters as they were, by site.
  struct SilentWrite {
    SilentWriteFinding::Way WrittenBy;
    std::string Operation;
    std::string Tensor;
    /// The modules whose parameters a loop variable runs over, as
    /// displayName gives them.
    std::string Module;
    /// It writes a value's storage, not a module's parameters.
    bool OnValue = false;
  };
  std::map<SiteId, SilentWrite> SilentWrites;
  /// The operations that may save a value, by site.
  std::map<SiteId, TSNode> SavingOps;
  /// The call of a function of the run each inlined event comes from
  /// (helperCall): a step, forward and backward all from one call are the
  /// function's own, found where it is lowered.
  llvm::DenseMap<SiteId, const void *> InlinedFrom;
  /// The backwards a module's forward appends at its returns: the caller's
  /// through the value returned.
  llvm::DenseSet<SiteId> ResultBackwards;
  /// Why no out-of-place spelling keeps the meaning of Write, or empty with
  /// the edits in Fix.
  std::string outOfPlaceFix(const ValueWrite &Write, std::vector<Edit> &Fix);
  /// Whether Id, a use of a tensor's name, cannot keep a handle to its
  /// storage: an operand of an operation that makes a new tensor, a
  /// module's input, or a query of its shape.
  bool usedWithoutHandle(TSNode Id);
  /// Each Python check's analysis (checks/<Title>.cpp, listed in
  /// PythonChecks.def): adds to Result the finding of C, a clobber of this
  /// scope's graph, if C is that check's (each clobber is one check's at
  /// most: each check tells its own by the writer's event and C.Silent).
#define DDPGUARD_PYTHON_CHECK(Title)                                           \
  void find##Title(const AnalysisResult &R, const Clobber &C,                  \
                   CheckResult &Result);
#include "PythonChecks.def"
  /// The first backward through Saver after Writer, but for the backwards a
  /// module's forward appends at its returns (ResultBackwards).
  std::optional<SiteId> firstOwnBackward(const AnalysisResult &R,
                                         OriginId Saver,
                                         OriginId Writer) const;

private:
  using Values = llvm::SmallVector<ValueId, 4>;
  struct Loop {
    unsigned Head;
    unsigned Exit;
  };

  ValueId valueOf(StringRef Key);
  /// The key of an instance's attribute that may be a plain module
  /// (model.generator) where the binding gives none, else empty.
  std::string attributeModuleKey(TSNode Object);
  /// checkpoint(module, *inputs) (torch.utils.checkpoint): the module's
  /// forward, which saves under checkpointing's hooks; its output.
  std::optional<ValueId> checkpointedForward(TSNode N);
  ObjectId objectFor(StringRef Key, const Binding &Bound);
  /// Appends to block B a forward of call N on the object bound to Key;
  /// returns its output.
  /// With Module, the forward saves its parameters too.
  ValueId forward(unsigned B, TSNode N, StringRef Key, const Binding &Bound,
                  const Values &Inputs,
                  const Frontend::ModuleInfo *Module = nullptr,
                  bool Bypass = false);
  SiteId site(TSNode N) {
    Sites.push_back(positionOf(N));
    SitePlaces.push_back(Here);
    if (Inlining)
      InlinedFrom[Sites.size() - 1] = Inlining;
    return Sites.size() - 1;
  }
  /// The call helperCall is inlining, else null.
  const void *Inlining = nullptr;
  unsigned startBlock() { return Current = Graph.addBlock(); }
  void edgeTo(unsigned B) { Graph.addEdge(Current, B); }

  void statements(TSNode Block);
  void statement(TSNode N);
  /// Binds the targets of Left to From; with Right (the assigned
  /// expression), a name gets Right's storage.
  void assign(TSNode Left, const Values &From, bool Accumulate,
              TSNode Right = TSNode{});
  Values expression(TSNode N);
  Values call(TSNode N);
  /// Appends at Site a step of Optimizer (as the code names it) that writes
  /// the parameter sets Info steps, and records it for the finding.
  void appendStep(SiteId Site, std::string Optimizer,
                  const Frontend::OptimizerInfo &Info);
  /// A call of a function of the run where steps are followed: the steps,
  /// backwards and module forwards of its body (and of the functions it
  /// calls, to a depth) appended at the call, in the body's order, each
  /// resolved with the call's arguments as the parameters
  /// (HelperCalls.cpp). Nullopt when the body has none of them.
  std::optional<Values> helperCall(TSNode N, const Scope &Helper);
  struct Inlined;
  void inlineBody(Inlined &Call, unsigned Depth, bool &Found);
  /// What expression E of an inlined body holds: the caller's values of the
  /// parameters it names, and the outputs of the body's forwards for any
  /// other name.
  Values inlinedValues(const Inlined &Call, TSNode E);
  /// Lowers each named child and joins what their histories come from.
  Values children(TSNode N);
  /// Whether a `with` item or decorator turns grad mode off (true), on
  /// (false), or leaves it (nullopt).
  std::optional<bool> gradModeOf(TSNode Expression);
  static bool isTrue(TSNode N) { return !isNull(N) && type(N) == "true"; }

  /// The forward of a module saves its parameters (as its kind does).
  void saveParameters(Event &Forward, const Frontend::ModuleInfo &Module,
                      const Values &Inputs);
  /// Steps are followed only in scopes that step and backpropagate (the
  /// text says so): elsewhere plain modules' forwards are not events.
  bool TracksSteps = false;
  /// In-place writes on values are followed in scopes that backpropagate
  /// and in modules' forwards (IsModuleForward), whose callers backpropagate
  /// through the value they return.
  bool TracksValues = false;
  bool IsModuleForward = false;
  /// Recurrent state: a module forward's parameter whose tensors the forward
  /// writes in place and returns (`Si, Zi = memory; Zi += K; return V, [Si,
  /// Zi]`). Its caller feeds the returned state into the next call, so the
  /// body is lowered as a loop: each return flows back into the parameter.
  struct CarriedState {
    std::string Parameter;
    /// The names bound from it that are written and returned.
    llvm::SmallVector<std::string, 2> Names;
  };
  std::vector<CarriedState> carriedState();
  std::vector<CarriedState> Carried;
  /// With carried state: the block each return loops back to, and the
  /// parameters' values.
  unsigned CallHead = 0;
  llvm::SmallVector<ValueId, 1> CarriedValues;
  /// Whether the scope holds a write that may be in place.
  bool writesInPlace();
  /// Where the tensor N's storage comes from: the node whose tensor N is a
  /// view, handle or in-place result of (x.view(...), x[i], x.T, x.mul_(2),
  /// F.relu(x, inplace=True)), else null.
  TSNode sharedFrom(TSNode N);
  /// The value whose storage the tensor N shares: a name, the result of an
  /// operation, or a view of one; nullopt where unknown.
  std::optional<ValueId> storageSource(TSNode N);
  TensorSetId newStorage() {
    return Graph.addTensorSet({TensorSetInfo::Kind::Tensors, ""});
  }
  /// Lowers an operation that saves tensors for backward (SavedOperands.def)
  /// on Operands as an Op event; Others are lowered for their history.
  Values savingOp(TSNode N, const SavedOp &Op, llvm::ArrayRef<TSNode> Operands,
                  llvm::ArrayRef<TSNode> Others);
  /// The table's entry for a call or binary operator that saves a tensor,
  /// with its operands.
  const SavedOp *savingOpOf(TSNode N, llvm::SmallVectorImpl<TSNode> &Operands,
                            llvm::SmallVectorImpl<TSNode> &Others);
  /// Appends the silent write N, an in-place method on Written (x.data or,
  /// under _unsafe_preserve_version_counter, x): to the parameters of the
  /// module x is (a part of, or a loop variable over the parameters of),
  /// else through x's storage.
  void silentWrite(TSNode N, TSNode Written, bool ThroughData,
                   std::string Operation);
  /// The modules whose parameters the name Tensor iterates over, as
  /// parameterSources gives them: `for p in D.parameters()`,
  /// `for n, p in D.named_parameters()`, `for p, q in zip(A.parameters(),
  /// B.parameters())` around it.
  std::vector<std::string> iteratedParameters(TSNode Tensor);
  /// Inside `with torch.autograd._unsafe_preserve_version_counter(...)`.
  bool PreservesVersions = false;
  /// Appends a write through the storage of Tensor.
  void valueWrite(ValueWrite::Form Form, TSNode Node, TSNode Tensor,
                  std::string Operation);
  /// An in-place operation N on Written whose out-of-place form Base saves
  /// its result (relu_, sigmoid_, exp_): it saves the written tensor.
  std::optional<ValueId> savesItsResult(TSNode N, TSNode Written,
                                        StringRef Base, SavedOpForm Form);
  /// Whether the module Callee names saves its output for backward (an
  /// activation that saves its result, or a Sequential ending in one):
  /// always (true), if an input requires grad (false), or not (nullopt).
  std::optional<bool> savesItsOutput(TSNode Callee, unsigned Depth = 0);
  /// The forward N of the module Callee saves its output as
  /// savesItsOutput says.
  void saveOutput(Event &Forward, TSNode N, TSNode Callee,
                  const Values &Inputs);
  llvm::StringMap<std::optional<bool>> OutputSaves;
  /// The torch.nn class (torch.nn.ReLU) of the module Callee names when it
  /// was built with inplace=True: its forward writes its input. Else empty.
  std::string inPlaceModule(TSNode Callee);
  /// The values of the operations and forwards whose tensors the lowering
  /// follows, by node: where a temporary's storage is.
  llvm::DenseMap<const void *, ValueId> OpResults;
  /// The parameter set of the module Key names, made at its first use.
  /// The module a key names, whatever it is called where it is asked:
  /// "@<file>:<offset>.part" of "self.d@<file>:<offset>.part" and of
  /// "model.d@<file>:<offset>.part".
  static StringRef identity(StringRef Key) {
    return Key.contains('@') ? Key.drop_until([](char C) { return C == '@'; })
                             : Key;
  }
  TensorSetId parametersOf(StringRef Key) {
    auto [It, Inserted] = ParameterSets.try_emplace(identity(Key), 0);
    if (Inserted)
      It->second = Graph.addTensorSet(
          {TensorSetInfo::Kind::Parameters,
           displayName(Key) + "'s parameters"});
    return It->second;
  }
  llvm::StringMap<TensorSetId> ParameterSets;
  /// The parameter sets a step over the parameters of Key writes: Key's own,
  /// and those of the modules it is a part of or that are parts of it (a
  /// forward of net saves the parameters of net.encoder too).
  llvm::SmallVector<TensorSetId, 2> overlappingParameters(StringRef Key) {
    llvm::SmallVector<TensorSetId, 2> Sets = {parametersOf(Key)};
    StringRef Id = identity(Key);
    for (const auto &[Other, Set] : ParameterSets)
      if (Other != Id && (Other.starts_with((Id + ".").str()) ||
                          Id.starts_with((Other + ".").str())))
        Sets.push_back(Set);
    return Sets;
  }
  /// The plain module a name or self attribute is bound to, asked once per
  /// key (each asking scans the scope's assignments).
  std::optional<Frontend::ModuleInfo> moduleNamed(TSNode N, StringRef Key) {
    auto [It, Inserted] = Modules.try_emplace(Key);
    if (Inserted) {
      // A self attribute is the class's, whichever method asks: asked once
      // per class (measured: each method of torch's DDP class scanning the
      // class again was a tenth of checking distributed.py).
      if (Key.starts_with("self.") && !isNull(S.Class)) {
        auto [Shared, New] = F.SelfModules.try_emplace(
            {ts_node_start_byte(S.Class), Key.str()});
        if (New)
          Shared->second = F.moduleNamed(N, S);
        It->second = Shared->second;
      } else {
        It->second = F.moduleNamed(N, S);
      }
    }
    return It->second;
  }
  llvm::StringMap<std::optional<Frontend::ModuleInfo>> Modules;

  Frontend &F;
  Scope &S;
  unsigned Current = 0;
  unsigned Exit = 0;
  bool GradEnabled = true;
  /// The objects whose no_sync() block the lowering is in.
  llvm::StringSet<> NoSyncObjects;
  std::vector<Loop> Loops;
  llvm::StringMap<ValueId> Names;
  llvm::StringMap<ObjectId> Objects;
};

/// Puts the check's findings of a run (PythonChecks.def) in their order, each
/// once: a step or write a helper inlines is found once per caller.
#define DDPGUARD_PYTHON_CHECK(Title) void order##Title(CheckResult &Result);
#include "PythonChecks.def"

/// A saving operation as a message names it: one that spans lines or runs
/// long by its function (`torch.einsum(...)`), else Uncalled.
std::string saverName(StringRef Saver, const std::string &Uncalled);

} // namespace detail
} // namespace python
} // namespace ddpguard

#endif
