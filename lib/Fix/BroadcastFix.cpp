//===- BroadcastFix.cpp - broadcast_buffers(false) at the construction ----===//

#include "Fixes.h"
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

/// Appends `.setter(false)` to an options expression, parenthesised unless it
/// is already a postfix expression.
static FixOutcome appendSetter(const Expr *Options, StringRef Setter,
                               const ASTContext &Context) {
  const Expr *Written = Options->IgnoreImplicit();
  std::string Call = (".") + Setter.str() + "(false)";
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
/// new argument lands at Index.
static FixOutcome appendArgument(const Construction &C, unsigned Index,
                                 StringRef Text, const ASTContext &Context) {
  if (writtenArgs(C.Args) != Index || Index == 0)
    return reason("the construction does not pass the arguments before "
                  "'broadcast_buffers'");
  FixOutcome Outcome;
  Outcome.Hints.push_back(FixItHint::CreateInsertion(
      afterToken(C.Args[Index - 1]->getEndLoc(), Context), (", " + Text).str()));
  return Outcome;
}

static FixOutcome makeBroadcastFixAnywhere(const Construction &C,
                                           ASTContext &Context);

FixOutcome makeBroadcastFix(const Construction &C, ASTContext &Context) {
  FixOutcome Outcome = makeBroadcastFixAnywhere(C, Context);
  if (!Outcome.applies())
    return Outcome;
  return requireFileLocations(std::move(Outcome),
                              "the construction of '" +
                                  C.Object->getNameAsString() +
                                  "' is in a macro expansion");
}

static FixOutcome makeBroadcastFixAnywhere(const Construction &C,
                                           ASTContext &Context) {
  const BroadcastSetting &Setting = C.Rule->Broadcast;
  std::string Name = C.Object->getNameAsString();
  if (!C.Expr)
    return reason("the construction of '" + Name + "' is not visible here");
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
    if (C.OptionsVar && C.OptionsVar->getInit() &&
        !isa<ParmVarDecl>(C.OptionsVar)) {
      const Expr *Init = skipImplicit(C.OptionsVar->getInit());
      // Extend a fresh options chain; never mutate a copied-from object.
      const Expr *Chain = Init;
      while (const auto *Call = dyn_cast<CXXMemberCallExpr>(Chain))
        Chain = skipImplicit(Call->getImplicitObjectArgument());
      if (isa<CXXConstructExpr>(Chain))
        return appendSetter(Init, Setting.Setter, Context);
    }
    if (C.Options)
      return appendSetter(C.Options, Setting.Setter, Context);
    return appendArgument(C, Setting.Argument,
                          Setting.OptionsType + "()." + Setting.Setter +
                              "(false)",
                          Context);
  }
  case BroadcastSetting::Kind::ConstructorArgument:
    return appendArgument(C, Setting.Argument, "false", Context);
  case BroadcastSetting::Kind::Field: {
    if (!C.DeclStatement)
      return reason("'" + Name + "' is not a local variable; set '" +
                    Setting.FieldName + "' to false where it is constructed");
    const SourceManager &SM = Context.getSourceManager();
    unsigned Column = SM.getSpellingColumnNumber(C.DeclStatement->getBeginLoc());
    QualType Type = C.Object->getType().getNonReferenceType();
    bool Pointer = Type->isPointerType() ||
                   (Type->getAsCXXRecordDecl() &&
                    StringRef(qualifiedName(Type->getAsCXXRecordDecl()))
                        .ends_with("_ptr"));
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

} // namespace fix
} // namespace ddpguard
