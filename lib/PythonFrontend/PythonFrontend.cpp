//===- PythonFrontend.cpp - Python training scripts as event graphs -------===//
//
// Parses the files of a run, binds their names (Names.cpp, Modules.cpp),
// lowers each scope (Lowering.cpp, ValueWrites.cpp) and turns the analysis's
// clobbers into findings (Findings.cpp, one check each in checks/, Fixes.cpp).
//
//===----------------------------------------------------------------------===//

#include "PythonFrontend.h"
#include "Frontend.h"
#include "Lowering.h"
#include "Parsing.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/thread.h"

namespace ddpguard {
namespace python {
namespace detail {

void Frontend::collectFile(TSNode Root) {
  auto Module = std::make_unique<Scope>();
  Module->Owner = this;
  Module->Node = Root;
  Module->Name = "<module>";
  ModuleScope = Module.get();
  Scopes.push_back(std::move(Module));
  collect(Root, *ModuleScope, TSNode{}, "");
}

CheckResult Frontend::findings(TSNode Root) {
  CheckResult Result;
  collectErrors(Root, Result.SyntaxErrors);
  // A method called on an instance (netD.netG_adv_loss(fake)) is found
  // through the run's call sites: built once, now that names are bound.
  if (!Scopes.empty())
    callSitesOf(*Scopes.front());
  for (auto &S : Scopes)
    analyse(*S, Result);
#define DDPGUARD_PYTHON_CHECK(Title) order##Title(Result);
#include "PythonChecks.def"
  return Result;
}

} // namespace detail

using namespace detail;

static std::vector<CheckResult>
checkOnThisThread(llvm::ArrayRef<SourceFile> Sources, const RuleSet &Rules) {
  std::unique_ptr<TSParser, void (*)(TSParser *)> Parser(ts_parser_new(),
                                                         ts_parser_delete);
  ts_parser_set_language(Parser.get(), tree_sitter_python());
  std::vector<ParsedFile> Parsed;
  // Null for a file too deep to analyse.
  std::vector<std::unique_ptr<Frontend>> Frontends;
  Run Files;
  for (const SourceFile &File : Sources) {
    Parsed.push_back(parsePython(Parser.get(), File.Source));
    if (Parsed.back().TooDeep) {
      Frontends.emplace_back();
      continue;
    }
    TSTree *Tree = Parsed.back().Tree.get();
    Files.Sources[Tree] = File.Source;
    Frontends.push_back(std::make_unique<Frontend>(
        File.Path, File.Source, Tree, Rules, File.Options, Files));
    Frontends.back()->SourceRoots = File.SourceRoots;
    // The module path, and every dotted name the file could be imported as.
    StringRef Module = File.Path;
    Module.consume_back(".py");
    if (llvm::sys::path::filename(Module) == "__init__")
      Module = llvm::sys::path::parent_path(Module);
    Files.ByPath[Module] = Frontends.back().get();
    std::string Name;
    for (auto Part = llvm::sys::path::rbegin(Module),
              End = llvm::sys::path::rend(Module);
         Part != End && *Part != "/"; ++Part) {
      Name = Name.empty() ? Part->str() : (*Part + "." + Name).str();
      Files.ByName[Name].push_back(Frontends.back().get());
    }
  }
  for (size_t I = 0; I < Sources.size(); ++I)
    if (Frontends[I])
      Frontends[I]->collectFile(ts_tree_root_node(Parsed[I].Tree.get()));
  for (auto &F : Frontends)
    if (F)
      F->collectPartials();
  // Each round binds at least one more name (a parameter of a helper of
  // another file too); the files have finitely many.
  for (bool Bound = true; Bound;) {
    Bound = false;
    for (auto &F : Frontends)
      if (F)
        Bound |= F->bindDDPNames();
  }
  std::vector<CheckResult> Results;
  for (size_t I = 0; I < Sources.size(); ++I) {
    if (!Frontends[I] || Sources[I].Context) {
      Results.emplace_back().TooDeep =
          Sources[I].Context ? std::nullopt : Parsed[I].TooDeep;
      continue;
    }
    Results.push_back(
        Frontends[I]->findings(ts_tree_root_node(Parsed[I].Tree.get())));
  }
  return Results;
}

std::vector<CheckResult> checkSources(llvm::ArrayRef<SourceFile> Sources,
                                      const RuleSet &Rules) {
  // The walks recurse over the tree: they run on a stack of their own, of a
  // size that does not depend on the caller's thread (as clang gives its
  // parser one).
  std::vector<CheckResult> Results;
  llvm::thread Worker(std::optional<unsigned>(AnalysisStackSize),
                      [&] { Results = checkOnThisThread(Sources, Rules); });
  Worker.join();
  return Results;
}

CheckResult checkSource(StringRef Source, const RuleSet &Rules,
                        const CheckOptions &Options) {
  return std::move(
      checkSources({SourceFile{"<source>.py", Source, Options}}, Rules)
          .front());
}

} // namespace python
} // namespace ddpguard
