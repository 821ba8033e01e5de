//===- CrossFile.h - DDP parameters constructed in other files ------------===//
//
// A DDP object that is a parameter of a function no one calls in its own
// translation unit (`void train_step(DDP &m)` in train.cpp, called from
// main.cpp) is constructed in another file. The check, one translation unit
// at a time, can only say so; the CLI checks several files in one run and
// joins them:
//
// - while each file is parsed for the check, a helper check indexes (Facts)
//   the calls that pass a DDP object to a function defined elsewhere, keyed
//   by the callee's USR and parameter index, with the construction reached,
//   its broadcast setting and the edits of the construction fixes; and the
//   findings on parameters whose callers may be elsewhere (open ends);
// - after the run, CrossFileResolver follows each such finding's open ends
//   through the other files' calls: the warning names the constructions,
//   carries their fix (edits in the other files), or goes when every
//   construction makes it harmless; a caller in a file of the database that
//   this run did not check is named.
//
// Nothing is parsed twice; clang-tidy and the plugin keep the per-file view.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_CROSSFILE_H
#define DDPGUARD_TOOLS_CROSSFILE_H

#include "Report.h"
#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "clang/Tooling/Core/Replacement.h"
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ddpguard {
namespace crossfile {

/// The helper check's name; the CLI enables it next to the real check.
inline constexpr char IndexCheckName[] = "ddpguard-cli-cross-file-index";

/// A place in a file: its real path and a byte offset.
struct Place {
  std::string File;
  unsigned Offset = 0;
  bool operator<(const Place &Other) const {
    return std::tie(File, Offset) < std::tie(Other.File, Other.Offset);
  }
  bool operator==(const Place &Other) const {
    return File == Other.File && Offset == Other.Offset;
  }
};

/// The edits of a fix at a construction by file, or why there is none.
struct Edit {
  std::map<std::string, clang::tooling::Replacements> Replacements;
  std::string Reason;
};

/// A construction that a call passes on, as seen where it is written.
struct Construction {
  Place At;
  /// "'model'", or "the temporary".
  std::string Object;
  /// The callees of the calls it goes through, outermost first.
  std::vector<std::string> Chain;
  bool Broadcasts = true;
  bool OncePerBackward = false;
  bool HasBuffers = true;
  /// How it sets broadcast_buffers, as a note says it.
  std::string Setting;
  Edit BroadcastFix;
  Edit OncePerBackwardFix;
  /// "buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward)".
  std::string OncePerBackwardSetter;
};

/// A parameter of a function that is not called where it is defined.
struct OpenEnd {
  std::string Usr;
  unsigned Index = 0;
  /// "'train_step'", and the identifier its calls spell.
  std::string Function;
  std::string Identifier;
  /// The callees from that function on to the finding's, outermost first.
  std::vector<std::string> Chain;
};

/// Why a caller's object is not followed, and where that shows.
struct NotFollowed {
  std::string Why;
  Place At;
};

/// What the calls of a function pass for one of its parameters.
struct Resolution {
  std::vector<Construction> Sources;
  std::vector<OpenEnd> Open;
  std::optional<NotFollowed> Failure;
};

/// The calls of one translation unit that pass a DDP object for a parameter
/// of a function defined elsewhere.
struct CallEntry {
  std::string Usr;
  unsigned Index = 0;
  Resolution Passed;
};

/// A finding on a parameter whose callers may be in other files.
struct Need {
  /// The warning's place and the object it names.
  Place Warning;
  std::string Object;
  /// The places of the check's notes that the other files answer: the
  /// parameter (constructed out of sight) and why its callers are not
  /// followed.
  Place Parameter;
  Place WhyNot;
  std::string FixMode;
  /// The once-per-backward policy would not remove the finding.
  bool OncePerBackwardFails = false;
  Resolution Callers;
};

struct Facts {
  std::vector<CallEntry> Calls;
  std::vector<Need> Needs;
};

/// Where the helper check of the translation unit being parsed on this
/// thread puts its facts, for the scope of one file's check.
class FactsScope {
public:
  explicit FactsScope(Facts &Into);
  ~FactsScope();
};

/// Joins the facts of one run's translation units.
class CrossFileResolver {
public:
  /// Unchecked: the translation units of the compile database this run did
  /// not parse, whose calls are looked for by name.
  CrossFileResolver(const std::vector<const Facts *> &All,
                    std::vector<std::string> Unchecked);

  /// Resolves the findings of one translation unit whose facts are Own: they
  /// get notes, fixes in other files, or go.
  void resolve(const Facts &Own, std::vector<Finding> &Findings);

private:
  struct Joined {
    std::vector<Construction> Sources;
    std::vector<NotFollowed> Failures;
    /// Open ends no checked file calls.
    std::vector<OpenEnd> Uncalled;
    /// Every function whose callers were looked for.
    std::set<std::string> Identifiers;
  };
  void join(const Resolution &R, const std::vector<std::string> &Suffix,
            Joined &Into, std::set<std::pair<std::string, unsigned>> &Seen);
  /// Calls of these identifiers in the unchecked translation units.
  std::vector<std::pair<std::string, Place>>
  uncheckedCalls(const std::set<std::string> &Identifiers);
  /// Rewrites the finding of N; false when it is to go.
  bool rewrite(const Need &N, Joined &J, Finding &F);

  std::multimap<std::pair<std::string, unsigned>, const Resolution *> Calls;
  std::vector<std::string> Unchecked;
  /// Identifier → its calls in the unchecked files (the first per file),
  /// lexed once.
  std::optional<std::map<std::string, std::vector<Place>>> UncheckedIndex;
  /// Constructions whose fix a warning already carries.
  std::set<Place> Fixed;
  LineTable Lines;
};

} // namespace crossfile
} // namespace ddpguard

#endif
