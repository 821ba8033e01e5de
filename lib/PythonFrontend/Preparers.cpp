//===- Preparers.cpp - library calls that hand modules back wrapped in DDP -===//
//
// Hugging Face accelerate's `model, opt = accelerator.prepare(model, opt)`
// returns each module in DistributedDataParallel under a multi-process
// launch. The rule file names such methods (rewrite-rules/ddpguard.yaml,
// `preparers`); a target of their call is a DDP object like any other.
//
//===----------------------------------------------------------------------===//

#include "Frontend.h"
#include <functional>

namespace ddpguard {
namespace python {
namespace detail {

using llvm::StringRef;

const PreparerRule *Frontend::preparerCall(TSNode Call, const Scope &S,
                                           Value &Construction) const {
  if (Rules.preparers().empty() || type(Call) != "call")
    return nullptr;
  TSNode Callee = field(Call, "function");
  if (type(Callee) != "attribute")
    return nullptr;
  StringRef Method = text(field(Callee, "attribute"));
  if (llvm::none_of(Rules.preparers(), [&](const PreparerRule &Rule) {
        return Rule.Method == Method;
      }))
    return nullptr;
  for (const Value &V : valuesOf(field(Callee, "object"), S)) {
    if (type(V.Node) != "call")
      continue;
    std::string Class = V.In->Owner->qualifiedName(field(V.Node, "function"));
    if (const PreparerRule *Rule = Rules.findPreparer(Class, Method)) {
      Construction = V;
      return Rule;
    }
  }
  return nullptr;
}

void Frontend::forEachPrepared(
    TSNode Targets, TSNode Call, const Scope &S,
    llvm::function_ref<void(TSNode, const Binding &)> Each) const {
  Value Construction;
  const PreparerRule *Rule = preparerCall(Call, S, Construction);
  if (!Rule)
    return;
  std::vector<TSNode> Arguments;
  forEachNamedChild(field(Call, "arguments"), [&](TSNode A) {
    if (type(A) != "comment")
      Arguments.push_back(A);
  });
  while (type(Targets) == "parenthesized_expression")
    Targets = namedChild(Targets, 0);
  std::vector<TSNode> Bound;
  StringRef Kind = type(Targets);
  if (Kind == "pattern_list" || Kind == "tuple_pattern" ||
      Kind == "list_pattern" || Kind == "tuple" || Kind == "list")
    forEachNamedChild(Targets, [&](TSNode T) { Bound.push_back(T); });
  else
    Bound.push_back(Targets);
  // prepare returns one object per argument, in order.
  if (Bound.size() != Arguments.size())
    return;
  for (size_t I = 0; I < Bound.size(); ++I) {
    TSNode Argument = Arguments[I];
    if (type(Argument) == "keyword_argument" ||
        type(Argument) == "list_splat" || !moduleNamed(Argument, S))
      continue;
    Each(Bound[I], preparedObject(Call, Argument, *Rule, Construction, S));
  }
}

Binding Frontend::preparedObject(TSNode Call, TSNode Module,
                                 const PreparerRule &Rule,
                                 const Value &Construction,
                                 const Scope &S) const {
  const WrapperRule &Wrapper = *Rules.find(Rule.WrapsIn);
  // The module's buffers, through the names it is bound to (self.discr).
  std::string Why;
  std::optional<Buffers> Has;
  for (const Value &V : valuesOf(Module, S)) {
    if (ts_node_eq(V.Node, Call))
      continue;
    Buffers Held = V.In->Owner->moduleBuffers(V.Node, *V.In, 1, Why);
    Has = Has ? either(*Has, Held) : Held;
  }
  if (!Has)
    Has = moduleBuffers(Module, S, 0, Why);
  ObjectInfo Info;
  Info.HasBuffers = *Has == Buffers::Yes ||
                    (*Has == Buffers::Unknown && Options.AssumeModulesHaveBuffers);
  // The broadcast setting of an options object the construction is given,
  // written there or through a name (kwargs_handlers=[ddp_kwargs]).
  const Frontend &In = *Construction.In->Owner;
  std::optional<bool> Broadcast;
  std::function<void(TSNode, const Scope &, unsigned)> Visit =
      [&](TSNode N, const Scope &At, unsigned Depth) {
        const Frontend &Of = *At.Owner;
        StringRef Kind = type(N);
        if (Depth > 4 || isNull(N))
          return;
        if (Kind == "call" &&
            llvm::is_contained(Rule.Options,
                               Of.qualifiedName(field(N, "function")))) {
          forEachNamedChild(field(N, "arguments"), [&](TSNode A) {
            // A value only a run can tell leaves the broadcast on.
            if (type(A) == "keyword_argument" &&
                Of.text(field(A, "name")) == Wrapper.Broadcast.Setter)
              Broadcast = type(field(A, "value")) != "false";
          });
        } else if (Kind == "identifier") {
          for (const Value &V : Of.valuesOf(N, At))
            Visit(V.Node, *V.In, Depth + 1);
        } else if (Kind == "keyword_argument") {
          Visit(field(N, "value"), At, Depth + 1);
        } else if (Kind == "list" || Kind == "tuple" ||
                   Kind == "argument_list") {
          forEachNamedChild(N, [&](TSNode C) { Visit(C, At, Depth + 1); });
        }
      };
  Visit(field(Construction.Node, "arguments"), *Construction.In, 0);
  Info.BroadcastsBuffers = Broadcast.value_or(Wrapper.Broadcast.Default) &&
                           !Wrapper.preservesVersionCounters(Options.Version);
  Binding Object{Info, positionOf(Call), *Has == Buffers::Unknown ? Why : ""};
  Object.BuffersSavedIfInputRequiresGrad = *Has == Buffers::IfInputRequiresGrad;
  Object.File = Path;
  Object.BroadcastKeyword = Wrapper.Broadcast.Setter;
  // The fix gives the construction an options object with the broadcast
  // off, where it has none yet and the file names the options class.
  std::string OptionsName;
  for (const auto &Import : In.Imports)
    if (llvm::is_contained(Rule.Options, Import.second))
      OptionsName = Import.first().str();
  TSNode Arguments = field(Construction.Node, "arguments");
  TSNode Last{};
  bool HasOptions = false;
  forEachNamedChild(Arguments, [&](TSNode A) {
    if (type(A) == "comment")
      return;
    Last = A;
    HasOptions |= type(A) == "keyword_argument" &&
                  In.text(field(A, "name")) == Rule.OptionsKeyword;
    HasOptions |= type(A) == "dictionary_splat";
  });
  std::string Handler = Rule.OptionsKeyword + "=[" +
                        (OptionsName.empty() ? "DistributedDataParallelKwargs"
                                             : OptionsName) +
                        "(" + Object.BroadcastKeyword + "=False)]";
  if (HasOptions || OptionsName.empty() || &In != this) {
    Object.BroadcastWithheld =
        "the library builds the DistributedDataParallel: give '" +
        In.text(field(Construction.Node, "function")).str() + "(...)' " +
        Handler + (HasOptions ? " among its " + Rule.OptionsKeyword : "");
    return Object;
  }
  if (isNull(Last)) {
    Object.BroadcastFix = {ts_node_end_byte(Arguments) - 1, 0, Handler};
  } else {
    Object.BroadcastFix = {ts_node_end_byte(Last), 0, ", " + Handler};
  }
  return Object;
}

} // namespace detail
} // namespace python
} // namespace ddpguard
