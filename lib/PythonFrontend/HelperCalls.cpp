//===- HelperCalls.cpp - What a call of a function of the run does ------===//
//
// Real training code steps and backpropagates in helpers
// (`update_params(optim, loss)`, a base class's `take_optimisation_step`)
// and computes losses in others (`calc_policy_loss`, whose forwards save
// the critic's parameters). Where the caller follows steps, each call of a
// function of the run appends the steps, backwards and module forwards of
// the function's body at the call, in the body's order, with the call's
// arguments as the parameters: what the function does to the caller's
// model, optimizers and tensors.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace ddpguard {
namespace python {
namespace detail {

/// How deep calls of functions of the run are followed from a scope.
static constexpr unsigned MaxHelperDepth = 3;

struct Lowering::Inlined {
  const Scope *Helper;
  /// The call of Helper, in Caller.
  TSNode Call;
  const Scope *Caller;
  /// The caller's values of each parameter, and the arguments' text, by the
  /// parameter's index.
  std::vector<Values> Arguments;
  std::vector<std::string> ArgumentText;
  /// The outputs of the forwards inlined from the body.
  Values Outputs;
  /// The call in the scope lowered: the site of every event.
  TSNode Site;
};

Lowering::Values Lowering::inlinedValues(const Inlined &Call, TSNode E) {
  Values Out;
  if (isNull(E))
    return Out;
  const Frontend &In = *Call.Helper->Owner;
  const std::vector<TSNode> &Parameters = Call.Helper->Parameters;
  bool Local = false;
  llvm::DenseSet<const void *> AttributeNames;
  walkIteratively(E, [&](TSNode N, unsigned) {
    StringRef Kind = type(N);
    if (Kind == "attribute")
      AttributeNames.insert(field(N, "attribute").id);
    if (Kind == "keyword_argument")
      AttributeNames.insert(field(N, "name").id);
    if (Kind != "identifier" || AttributeNames.count(N.id))
      return Walk::Enter;
    StringRef Name = In.text(N);
    if (Name == "self")
      return Walk::Enter;
    for (unsigned I = 0; I < Parameters.size(); ++I)
      if (!isNull(Parameters[I]) && In.text(Parameters[I]) == Name) {
        Out.append(Call.Arguments[I].begin(), Call.Arguments[I].end());
        return Walk::Enter;
      }
    Local = true;
    return Walk::Enter;
  });
  if (Local)
    Out.append(Call.Outputs.begin(), Call.Outputs.end());
  return Out;
}

/// Whether Call runs with grad mode off in Helper: under `with
/// torch.no_grad():` or in a function decorated with it.
template <typename Fn>
static bool withoutGrad(TSNode Call, const Scope &Helper, Fn TurnsGradOff) {
  for (TSNode N = ts_node_parent(Call); !isNull(N); N = ts_node_parent(N)) {
    if (type(N) == "with_statement") {
      bool Off = false;
      walkIteratively(namedChild(N, 0), [&](TSNode Item, unsigned Depth) {
        if (type(Item) == "call" && TurnsGradOff(Item))
          Off = true;
        return Depth < 2 ? Walk::Enter : Walk::Skip;
      });
      if (Off)
        return true;
    }
    if (ts_node_eq(N, Helper.Node)) {
      TSNode Parent = ts_node_parent(N);
      bool Off = false;
      if (type(Parent) == "decorated_definition")
        forEachNamedChild(Parent, [&](TSNode D) {
          if (type(D) == "decorator" && TurnsGradOff(namedChild(D, 0)))
            Off = true;
        });
      return Off;
    }
  }
  return false;
}

void Lowering::inlineBody(Inlined &Call, unsigned Depth, bool &Found) {
  const Scope &Helper = *Call.Helper;
  Frontend &In = *Helper.Owner;
  // The helper's parameters are this call's arguments while it is read.
  Value Context{Call.Call, Call.Helper, std::nullopt, Call.Call, Call.Caller};
  ReadingReturn Reading(F.Files, Context);
  const std::vector<TSNode> &Parameters = Helper.Parameters;
  auto TurnsGradOff = [&](TSNode Expression) {
    if (type(Expression) != "call")
      return false;
    std::string Name = In.qualifiedName(field(Expression, "function"));
    return Name == "torch.no_grad" || Name == "torch.inference_mode";
  };
  auto ArgumentNamed = [&](TSNode Expression) -> std::string {
    for (unsigned I = 0; I < Parameters.size(); ++I)
      if (!isNull(Parameters[I]) && type(Expression) == "identifier" &&
          In.text(Parameters[I]) == In.text(Expression) &&
          !Call.ArgumentText[I].empty())
        return Call.ArgumentText[I];
    return In.text(Expression).str();
  };
  for (TSNode C : Helper.Bindings) {
    if (type(C) != "call")
      continue;
    TSNode Callee = field(C, "function");
    TSNode Arguments = field(C, "arguments");
    StringRef Method =
        type(Callee) == "attribute" ? In.text(field(Callee, "attribute")) : "";
    if (Method == "step") {
      TSNode Stepped;
      if (std::optional<Frontend::OptimizerInfo> Optimizer =
              In.steppedOptimizer(C, Helper, Stepped)) {
        appendStep(site(Call.Site), ArgumentNamed(Stepped), *Optimizer);
        Found = true;
      }
      continue;
    }
    if (Method == "backward" || Method == "manual_backward" ||
        In.qualifiedName(Callee) == "torch.autograd.backward") {
      Values Roots;
      if (Method == "backward" || Method == "manual_backward")
        Roots = inlinedValues(Call, field(Callee, "object"));
      TSNode First = namedChild(Arguments, 0);
      if (!isNull(First) && type(First) != "keyword_argument") {
        Values Loss = inlinedValues(Call, First);
        Roots.append(Loss.begin(), Loss.end());
      }
      bool Retain = false, Create = false;
      forEachNamedChild(Arguments, [&](TSNode A) {
        if (type(A) != "keyword_argument" || !isTrue(field(A, "value")))
          return;
        StringRef Keyword = In.text(field(A, "name"));
        Retain |= Keyword == "retain_graph" || Keyword == "create_graph";
        Create |= Keyword == "create_graph";
      });
      Graph.append(Current,
                   Event::backward(site(Call.Site), Roots, Retain, Create));
      Found = true;
      continue;
    }
    // A module's forward: self.critic(s, a), net.forward(x), model(x).
    TSNode Object = Method == "forward" ? field(Callee, "object") : Callee;
    if (type(Object) == "identifier" || type(Object) == "attribute") {
      StringRef Root = In.text(Object).take_until([](char C) {
        return C == '.';
      });
      // self(x) or self.forward(x) in a method called on a module
      // (netD.netG_adv_loss(fake)): the receiver's forward.
      std::optional<Frontend::ModuleInfo> Module;
      TSNode CallCallee = field(Call.Call, "function");
      if (In.text(Object) == "self" && !isNull(Helper.Class) &&
          type(CallCallee) == "attribute")
        Module = Call.Caller->Owner->moduleNamed(field(CallCallee, "object"),
                                                 *Call.Caller);
      else if (!In.Imports.count(Root))
        Module = In.moduleNamed(Object, Helper);
      if (Module) {
          Values Inputs;
          forEachNamedChild(Arguments, [&](TSNode A) {
            Values From = inlinedValues(Call, A);
            Inputs.append(From.begin(), From.end());
          });
          Binding Plain;
          Plain.Info.BroadcastsBuffers = false;
          Plain.Info.HasBuffers = false;
          ValueId Output = Graph.addValue();
          bool Grad =
              GradEnabled && !withoutGrad(C, Helper, TurnsGradOff);
          // The forward's own line where the lowered file shows it.
          Event Forward = Event::forward(site(C.tree == Call.Site.tree ? C : Call.Site),
                                         objectFor(Module->Key, Plain), Grad,
                                         Output, Inputs);
          if (TracksValues)
            Forward.NewStorage = newStorage();
          saveParameters(Forward, *Module, Inputs);
          Graph.append(Current, std::move(Forward));
          Call.Outputs.push_back(Output);
          Found = true;
          continue;
        }
    }
    if (Depth + 1 >= MaxHelperDepth)
      continue;
    Scope *Next = In.calledFunction(Callee, Helper);
    if (!Next || Next == &Helper ||
        StringRef(Next->Name).ends_with(".__init__"))
      continue;
    // Events are placed at the innermost call in the lowered scope's file:
    // where the step is written as far as that file shows.
    Inlined Inner{Next, C, &Helper, {}, {}, {},
                  C.tree == Call.Site.tree ? C : Call.Site};
    size_t Count = Next->Parameters.size();
    Inner.Arguments.resize(Count);
    Inner.ArgumentText.resize(Count);
    In.forEachCallArgument(C, Helper, *Next,
                           [&](TSNode V, unsigned I, const Scope &Where) {
                             if (&Where != &Helper)
                               return;
                             Inner.Arguments[I] = inlinedValues(Call, V);
                             Inner.ArgumentText[I] = ArgumentNamed(V);
                           });
    inlineBody(Inner, Depth + 1, Found);
    Call.Outputs.append(Inner.Outputs.begin(), Inner.Outputs.end());
  }
}

std::optional<Lowering::Values> Lowering::helperCall(TSNode N,
                                                     const Scope &Helper) {
  if (StringRef(Helper.Name).ends_with(".__init__") ||
      !F.effectsOf(Helper).Any)
    return std::nullopt;
  Inlined Call{&Helper, N, &S, {}, {}, {}, N};
  size_t Count = Helper.Parameters.size();
  Call.Arguments.resize(Count);
  Call.ArgumentText.resize(Count);
  // Each argument is lowered once, in order, then given to its parameter.
  llvm::DenseMap<const void *, Values> Lowered;
  Values All;
  forEachNamedChild(field(N, "arguments"), [&](TSNode A) {
    TSNode E = type(A) == "keyword_argument" ? field(A, "value") : A;
    Values From = expression(E);
    All.append(From.begin(), From.end());
    Lowered[E.id] = std::move(From);
  });
  F.forEachCallArgument(N, S, Helper,
                        [&](TSNode V, unsigned I, const Scope &Where) {
                          if (&Where != &S)
                            return;
                          if (auto It = Lowered.find(V.id); It != Lowered.end())
                            Call.Arguments[I] = It->second;
                          Call.ArgumentText[I] = F.text(V).str();
                        });
  bool Found = false;
  Inlining = N.id;
  inlineBody(Call, 0, Found);
  Inlining = nullptr;
  All.append(Call.Outputs.begin(), Call.Outputs.end());
  return All;
}

const FunctionEffects &Frontend::effectsOf(const Scope &Function) const {
  // The entry is made first: a recursive function reads it as it stands.
  auto [It, Inserted] = Files.EffectsOf.try_emplace(&Function);
  if (!Inserted)
    return It->second;
  const Frontend &In = *Function.Owner;
  StringRef Text = In.text(Function.Node);
  FunctionEffects Found;
  Found.Steps = Text.contains(".step(");
  Found.Backpropagates = Text.contains("backward");
  // Forwards are found at each call; a body that calls anything may run
  // one.
  Found.Any = Found.Steps || Found.Backpropagates || Text.contains("(");
  if (!(Found.Steps && Found.Backpropagates))
    for (TSNode C : Function.Bindings) {
      if (type(C) != "call")
        continue;
      const Scope *Next = In.calledFunction(field(C, "function"), Function);
      if (!Next || Next == &Function)
        continue;
      const FunctionEffects &Called = effectsOf(*Next);
      Found.Steps |= Called.Steps;
      Found.Backpropagates |= Called.Backpropagates;
    }
  return Files.EffectsOf[&Function] = Found;
}

} // namespace detail
} // namespace python
} // namespace ddpguard
