//===- BroadcastFix.cpp - Options set at the DDP construction -------------===//
//
// broadcast_buffers(false), or the once-per-backward buffer policy, set where
// the DDP object is constructed: one helper per construction form.
//
//===----------------------------------------------------------------------===//

#include "Fixes.h"
#include "Frontend/Callers.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Lex/Lexer.h"

using namespace clang;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace fix {

static FixOutcome reason(std::string Why) {
  FixOutcome Outcome;
  Outcome.Reason = std::move(Why);
  return Outcome;
}

static FixOutcome replaceWithFalse(const Expr *Setting) {
  FixOutcome Outcome;
  Outcome.Hints.push_back(FixItHint::CreateReplacement(
      CharSourceRange::getTokenRange(Setting->getSourceRange()), "false"));
  return Outcome;
}

static SourceLocation afterToken(SourceLocation Loc, const ASTContext &Context) {
  return Lexer::getLocForEndOfToken(Loc, 0, Context.getSourceManager(),
                                    Context.getLangOpts());
}

/// Appends `.Setter(Value)` to an options expression, parenthesised unless it
/// is already a postfix expression.
static FixOutcome appendSetter(const Expr *Options, StringRef Setter,
                               StringRef Value, const ASTContext &Context) {
  const Expr *Written = Options->IgnoreImplicit();
  std::string Call = ("." + Setter + "(" + Value + ")").str();
  FixOutcome Outcome;
  if (isa<CallExpr, CXXConstructExpr, DeclRefExpr, MemberExpr, ParenExpr,
          CXXFunctionalCastExpr>(Written)) {
    Outcome.Hints.push_back(FixItHint::CreateInsertion(
        afterToken(Written->getEndLoc(), Context), Call));
  } else {
    Outcome.Hints.push_back(
        FixItHint::CreateInsertion(Written->getBeginLoc(), "("));
    Outcome.Hints.push_back(FixItHint::CreateInsertion(
        afterToken(Written->getEndLoc(), Context), ")" + Call));
  }
  return Outcome;
}

static unsigned writtenArgs(llvm::ArrayRef<const Expr *> Args) {
  unsigned N = 0;
  while (N < Args.size() && !isa<CXXDefaultArgExpr>(Args[N]))
    ++N;
  return N;
}

/// Inserts `, Text` after the last written constructor argument, when the
/// new argument lands at Index. What names the option for the reason.
static FixOutcome appendArgument(const Construction &C, unsigned Index,
                                 StringRef Text, const ASTContext &Context,
                                 StringRef What = "broadcast_buffers") {
  if (writtenArgs(C.Args) != Index || Index == 0)
    return reason(("the construction does not pass the arguments before '" +
                   What + "'")
                      .str());
  FixOutcome Outcome;
  Outcome.Hints.push_back(FixItHint::CreateInsertion(
      afterToken(C.Args[Index - 1]->getEndLoc(), Context), (", " + Text).str()));
  return Outcome;
}

/// The initialiser of the options variable when it is a fresh options
/// chain written after `=` (`auto o = Options().a(1);`), which a setter may
/// extend; never a copy of another object nor the variable's own
/// construction (`Options o;`, `Options o{}`).
static const Expr *freshOptionsInit(const Construction &C,
                                    const ASTContext &Context) {
  const VarDecl *Var = C.OptionsVar;
  if (!Var || !Var->getInit() || isa<ParmVarDecl>(Var) ||
      Var->getType()->isReferenceType())
    return nullptr;
  const Expr *Init = skipImplicit(Var->getInit());
  if (!Context.getSourceManager().isBeforeInTranslationUnit(
          Var->getLocation(), Init->getBeginLoc()))
    return nullptr;
  const Expr *Chain = Init;
  while (const auto *Call = dyn_cast<CXXMemberCallExpr>(Chain))
    Chain = skipImplicit(Call->getImplicitObjectArgument());
  return isa<CXXConstructExpr>(Chain) ? Init : nullptr;
}

static FixOutcome makeBroadcastFixAnywhere(const Construction &C,
                                           ASTContext &Context,
                                           TorchVersion Version);

bool claimConstructions(FixOutcome &Outcome,
                        llvm::DenseSet<const Construction *> &Fixed) {
  std::vector<FixItHint> Kept;
  std::vector<std::pair<const Construction *, unsigned>> KeptEdits;
  for (unsigned I = 0; I < Outcome.Edits.size(); ++I) {
    auto [At, First] = Outcome.Edits[I];
    unsigned End = I + 1 < Outcome.Edits.size() ? Outcome.Edits[I + 1].second
                                                 : Outcome.Hints.size();
    if (!Fixed.insert(At).second)
      continue;
    KeptEdits.push_back({At, Kept.size()});
    Kept.insert(Kept.end(), Outcome.Hints.begin() + First,
                Outcome.Hints.begin() + End);
  }
  Outcome.Hints = std::move(Kept);
  Outcome.Edits = std::move(KeptEdits);
  return !Outcome.Edits.empty();
}

using ConstructionFix =
    llvm::function_ref<FixOutcome(const Construction &, ASTContext &)>;

/// Fix at C, or for a parameter whose callers are all seen at each caller's
/// construction that Needs it; no fix at all when one of those has none.
static FixOutcome atConstructions(const Construction &C, ASTContext &Context,
                                  ConstructionFix Make,
                                  llvm::function_ref<bool(const Construction &)>
                                      Needs) {
  if (!C.Callers.Complete) {
    FixOutcome Outcome = Make(C, Context);
    if (Outcome.applies())
      Outcome.Edits.push_back({&C, 0});
    return Outcome;
  }
  FixOutcome Outcome;
  for (const CallerSource &Source : C.Callers.Sources) {
    if (!Needs(*Source.From))
      continue;
    FixOutcome One = Make(*Source.From, Context);
    if (!One.applies())
      return reason(One.Reason + " (it reaches " +
                    describeCallee(Source.Calls.back()->getDirectCallee()) +
                    " through " + describeChain(Source) + ")");
    Outcome.Edits.push_back({Source.From, Outcome.Hints.size()});
    llvm::append_range(Outcome.Hints, One.Hints);
  }
  return Outcome;
}

static FixOutcome makeBroadcastFixAt(const Construction &C,
                                     ASTContext &Context,
                                     TorchVersion Version) {
  FixOutcome Outcome = makeBroadcastFixAnywhere(C, Context, Version);
  if (!Outcome.applies())
    return Outcome;
  return requireFileLocations(std::move(Outcome),
                              "the construction of '" +
                                  C.Object->getNameAsString() +
                                  "' is in a macro expansion");
}

FixOutcome makeBroadcastFix(const Construction &C, ASTContext &Context,
                            TorchVersion Version) {
  return atConstructions(C, Context,
                         [&](const Construction &At, ASTContext &In) {
                           return makeBroadcastFixAt(At, In, Version);
                         },
                         [](const Construction &From) {
                           return From.broadcasts();
                         });
}

std::string constructionNotVisible(StringRef Object) {
  return ("the construction of '" + Object + "' is not visible here").str();
}

static FixOutcome makeBroadcastFixAnywhere(const Construction &C,
                                           ASTContext &Context,
                                           TorchVersion Version) {
  const BroadcastSetting &Setting = C.Rule->Broadcast;
  // The spelling of the version judged by (forward_sync_buffers on 2.13+);
  // a setter the code already calls keeps its name, as an alias it works.
  StringRef Setter = Setting.setterAt(Version);
  std::string Name = C.Object->getNameAsString();
  if (!C.Expr) {
    FixOutcome Unseen = reason(constructionNotVisible(Name));
    Unseen.ConstructionNotVisible = true;
    return Unseen;
  }
  if (C.Expr->getBeginLoc().isMacroID() ||
      (C.Setting && C.Setting->getBeginLoc().isMacroID()))
    return reason("the construction of '" + Name + "' is in a macro expansion");
  if (C.Broadcast == BroadcastState::Unknown)
    return reason("'broadcast_buffers' of '" + Name +
                  "' is set to a value not known at compile time");
  if (C.Broadcast == BroadcastState::SetTrue && C.Setting)
    return replaceWithFalse(C.Setting);

  switch (Setting.SettingKind) {
  case BroadcastSetting::Kind::OptionBuilder: {
    // Extend a fresh options chain; never mutate a copied-from object.
    if (const Expr *Init = freshOptionsInit(C, Context))
      return appendSetter(Init, Setter, "false", Context);
    if (C.Options)
      return appendSetter(C.Options, Setter, "false", Context);
    return appendArgument(C, Setting.Argument,
                          Setting.OptionsType + "()." + Setter.str() +
                              "(false)",
                          Context, Setter);
  }
  case BroadcastSetting::Kind::ConstructorArgument:
    return appendArgument(C, Setting.Argument, "false", Context);
  case BroadcastSetting::Kind::Field: {
    if (!C.DeclStatement)
      return reason("'" + Name + "' is not a local variable; set '" +
                    Setting.FieldName + "' to false where it is constructed");
    const SourceManager &SM = Context.getSourceManager();
    unsigned Column = SM.getSpellingColumnNumber(C.DeclStatement->getBeginLoc());
    bool Pointer = accessedThroughArrow(C.Object->getType());
    FixOutcome Outcome;
    Outcome.Hints.push_back(FixItHint::CreateInsertion(
        afterToken(C.DeclStatement->getEndLoc(), Context),
        "\n" + std::string(Column > 0 ? Column - 1 : 0, ' ') + Name +
            (Pointer ? "->" : ".") + Setting.FieldName + " = false;"));
    return Outcome;
  }
  }
  return reason("unsupported rule");
}

static FixOutcome makeOncePerBackwardFixAnywhere(const Construction &C,
                                                 ASTContext &Context) {
  const WrapperRule &Rule = *C.Rule;
  const OncePerBackwardSetting &Policy = Rule.OncePerBackward;
  const BroadcastSetting &Setting = Rule.Broadcast;
  std::string Name = C.Object->getNameAsString();
  if (!Policy.available() ||
      Setting.SettingKind != BroadcastSetting::Kind::OptionBuilder)
    return reason("'" + Rule.Type +
                  "' has no once-per-backward buffer policy (its rule in '" +
                  Rule.SourceFile + "' has no 'once-per-backward')");
  if (!C.Expr) {
    FixOutcome Unseen = reason(constructionNotVisible(Name));
    Unseen.ConstructionNotVisible = true;
    return Unseen;
  }
  if (C.Expr->getBeginLoc().isMacroID() ||
      (C.Options && C.Options->getBeginLoc().isMacroID()))
    return reason("the construction of '" + Name + "' is in a macro expansion");

  if (const Expr *Init = freshOptionsInit(C, Context))
    return appendSetter(Init, Policy.Setter, Policy.Value, Context);
  if (C.Options) {
    // A parameter, a reference or a const object is not ours to change, and
    // may be const: set the policy on a copy.
    const auto *Ref = dyn_cast<DeclRefExpr>(skipImplicit(C.Options));
    const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
    if (Var && (isa<ParmVarDecl>(Var) || Var->getType()->isReferenceType() ||
                Var->getType().isConstQualified())) {
      FixOutcome Outcome;
      Outcome.Hints.push_back(FixItHint::CreateInsertion(
          Ref->getBeginLoc(), Setting.OptionsType + "("));
      Outcome.Hints.push_back(FixItHint::CreateInsertion(
          afterToken(Ref->getEndLoc(), Context),
          ")." + Policy.Setter + "(" + Policy.Value + ")"));
      return Outcome;
    }
    return appendSetter(C.Options, Policy.Setter, Policy.Value, Context);
  }
  return appendArgument(C, Setting.Argument,
                        Setting.OptionsType + "()." + Policy.Setter + "(" +
                            Policy.Value + ")",
                        Context, Policy.Setter);
}

static FixOutcome makeOncePerBackwardFixAt(const Construction &C,
                                           ASTContext &Context) {
  FixOutcome Outcome = makeOncePerBackwardFixAnywhere(C, Context);
  if (!Outcome.applies())
    return Outcome;
  return requireFileLocations(std::move(Outcome),
                              "the construction of '" +
                                  C.Object->getNameAsString() +
                                  "' is in a macro expansion");
}

FixOutcome makeOncePerBackwardFix(const Construction &C, ASTContext &Context) {
  return atConstructions(C, Context, makeOncePerBackwardFixAt,
                         [&](const Construction &From) {
                           return From.broadcasts() && !From.OncePerBackward;
                         });
}

} // namespace fix
} // namespace ddpguard
