//===- Relevance.h - Which translation units cannot hold the pattern ------===//
//
// The check reports only forwards on an object whose type is, or derives
// from, a wrapper a rule names (rewrite-rules/ddpguard.yaml and the rule
// files). Such a type is written somewhere in the translation unit under the
// last component of its qualified name: in the main file, in a header, in a
// macro's expansion, in an alias or a base list. So a translation unit whose
// preprocessed token stream (every file, system headers included, after
// macro expansion, with the unit's own compile command) holds none of these
// identifiers cannot contain the pattern and need not be parsed. Anything
// that leaves a doubt (an error while preprocessing, a rule file that does
// not load, a check option that does not parse) makes the unit relevant.
//
// The step check reports only steps of an optimizer whose type is, or
// derives from, a class of torch::optim; the user's code names it ('Adam',
// 'Optimizer'...). LibTorch's own optimizer headers, which <torch/torch.h>
// includes, name them all, so these identifiers count only outside a
// torch/optim folder: a unit that includes LibTorch but uses no optimizer
// is skipped as before.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_RELEVANCE_H
#define DDPGUARD_TOOLS_RELEVANCE_H

#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringSet.h"
#include <string>
#include <vector>

namespace ddpguard {

/// The identifiers that name the wrappers of the builtin rules and of the
/// rule files RuleFiles lists (';'-separated, as the check's option). False
/// when a rule file does not load (Error says why).
bool wrapperIdentifiers(llvm::StringRef RuleFiles, llvm::StringSet<> &Names,
                        std::string &Error);

/// The identifiers that name the optimizers whose step may write: the
/// classes of torch::optim but SGD (whose step does not), and their base.
const llvm::StringSet<> &optimizerIdentifiers();

struct Relevance {
  bool Relevant = true;
  /// Relevant: what made it so ("'DistributedDataParallel' at file:line",
  /// "an error while preprocessing"); irrelevant: empty.
  std::string Reason;
};

/// Runs only the preprocessor over File with its command from Database (and
/// ExtraArgsBefore / ExtraArgs inserted as clang-tidy does) and looks for
/// Names in the token stream, and for OutsideOptim where a token is spelled
/// outside a torch/optim folder.
Relevance scanTranslationUnit(const std::string &File,
                              const clang::tooling::CompilationDatabase &Database,
                              const std::vector<std::string> &ExtraArgsBefore,
                              const std::vector<std::string> &ExtraArgs,
                              const llvm::StringSet<> &Names,
                              const llvm::StringSet<> &OutsideOptim);

} // namespace ddpguard

#endif
