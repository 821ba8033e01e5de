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
// The in-place and parameter-write checks report only writes before a call
// named 'backward'; LibTorch's own headers (torch, ATen, c10 folders)
// declare it, so it counts only outside them.
//
// Which of these a check needs is its row's Triggers (Tidy/CheckNames.h): a
// unit is kept when it names the trigger of any check that runs.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_RELEVANCE_H
#define DDPGUARD_TOOLS_RELEVANCE_H

#include "clang-tidy/ClangTidyOptions.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringSet.h"
#include <map>
#include <mutex>
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

/// The identifiers that make a unit relevant, by where they count.
struct TriggerNames {
  llvm::StringSet<> Anywhere;
  /// Outside a torch/optim folder.
  llvm::StringSet<> OutsideOptim;
  /// Outside LibTorch's headers (a torch, ATen or c10 folder).
  llvm::StringSet<> OutsideLibTorch;
};

/// Why a unit with none of Triggers' names was skipped ("no DDP wrapper of
/// the rule set and no optimizer is named ...").
std::string triggerDescription(unsigned Triggers);

struct Relevance {
  bool Relevant = true;
  /// Relevant: what made it so ("'DistributedDataParallel' at file:line",
  /// "an error while preprocessing"); irrelevant: empty.
  std::string Reason;
};

/// Runs only the preprocessor over File with its command from Database (and
/// ExtraArgsBefore / ExtraArgs inserted as clang-tidy does) and looks for
/// Names in the token stream, each where it counts.
Relevance scanTranslationUnit(const std::string &File,
                              const clang::tooling::CompilationDatabase &Database,
                              const std::vector<std::string> &ExtraArgsBefore,
                              const std::vector<std::string> &ExtraArgs,
                              const TriggerNames &Names);

/// The wrapper identifiers for a RuleFiles value, loaded once per value.
class WrapperNames {
public:
  /// Null when a rule file does not load.
  const llvm::StringSet<> *get(const std::string &RuleFiles);

private:
  struct Entry {
    llvm::StringSet<> Names;
    bool Valid = true;
  };
  std::mutex Mutex;
  std::map<std::string, Entry> Loaded;
};

/// The triggers (Tidy/CheckNames.h) of the checks Options enables; every
/// check's when it names none.
unsigned enabledTriggers(const clang::tidy::ClangTidyOptions &Options);

/// Whether File, under its own options, names none of Triggers and need not
/// be parsed. Every doubt parses: a rule file that does not load, a check
/// option the check might reject (it reports that when it runs), an error
/// while preprocessing.
bool irrelevant(const std::string &File,
                const clang::tidy::ClangTidyOptions &Options,
                const clang::tooling::CompilationDatabase &Database,
                WrapperNames &Names, unsigned Triggers);

} // namespace ddpguard

#endif
