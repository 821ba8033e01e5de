//===- RuleSet.h - How DDP wrappers are recognised and fixed --------------===//
//
// Rule files (rewrite-rules/*.yaml) describe each DDP wrapper type: its
// forward entry points, where the wrapped module is, how broadcast_buffers is
// set at construction (and under which name on which LibTorch version), the
// name of its fused forward, the setter of its once-per-backward buffer
// policy, and from which version its broadcast preserves the buffers' version
// counters. See rewrite-rules/README.md for the format.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_RULES_RULESET_H
#define DDPGUARD_RULES_RULESET_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ddpguard {

/// A LibTorch version, as <torch/version.h> spells it.
struct TorchVersion {
  unsigned Major = 0, Minor = 0, Patch = 0;

  /// "2.12.1" or "2.13" (patch 0); nothing else.
  static std::optional<TorchVersion> parse(llvm::StringRef Text);
  std::string str() const;
  friend bool operator<(const TorchVersion &A, const TorchVersion &B) {
    return std::tie(A.Major, A.Minor, A.Patch) <
           std::tie(B.Major, B.Minor, B.Patch);
  }
  friend bool operator==(const TorchVersion &A, const TorchVersion &B) {
    return std::tie(A.Major, A.Minor, A.Patch) ==
           std::tie(B.Major, B.Minor, B.Patch);
  }
};

/// The oldest LibTorch ddpguard supports, judged by when no version is
/// known: the two-forward failure exists there.
inline constexpr TorchVersion OldestSupportedTorch{2, 11, 0};

/// A newer name of an options setter, from a LibTorch version on; the old
/// name stays an alias (DDP's broadcast_buffers became forward_sync_buffers
/// in 2.13).
struct RenamedSetter {
  std::string Setter;
  TorchVersion From;
};

struct BroadcastSetting {
  enum class Kind {
    /// An options object with a chained setter: Options().setter(false).
    OptionBuilder,
    /// A plain constructor argument.
    ConstructorArgument,
    /// A public field assigned after construction: D.field = false.
    Field,
  };
  Kind SettingKind = Kind::OptionBuilder;
  /// Constructor argument index (OptionBuilder, ConstructorArgument).
  unsigned Argument = 0;
  /// OptionBuilder: the options type and its setter.
  std::string OptionsType;
  std::string Setter;
  /// OptionBuilder: the setter's newer name, if it was renamed.
  std::optional<RenamedSetter> Renamed;
  /// Field: the field's name.
  std::string FieldName;
  /// The value when nothing sets it.
  bool Default = true;

  /// The setter a fix writes on LibTorch Version.
  llvm::StringRef setterAt(TorchVersion Version) const;
  /// What a note calls the setting on Version: the setter or field name.
  std::string nameAt(TorchVersion Version) const;
  /// Every setter name that sets it, the one that wins when both are
  /// called first (as in PyTorch 2.13, where forward_sync_buffers overrides
  /// the deprecated broadcast_buffers).
  llvm::SmallVector<llvm::StringRef, 2> setters() const;
};

/// A buffer policy under which buffers are broadcast only on the first
/// forward after a backward (ddpguard's BufferBroadcast::kOncePerBackward),
/// set with a chained setter on the broadcast-buffers options object. Empty
/// when the wrapper has none.
struct OncePerBackwardSetting {
  /// The options setter, e.g. buffer_broadcast.
  std::string Setter;
  /// The qualified enumerator passed to it, e.g.
  /// ddpguard::BufferBroadcast::kOncePerBackward.
  std::string Value;
  bool available() const { return !Setter.empty(); }
};

struct WrapperRule {
  /// Fully qualified name of the wrapper class (template name for templates).
  std::string Type;
  /// Where the wrapped module's type is found: a template argument, a
  /// constructor argument or a field. At most one is set.
  std::optional<unsigned> ModuleTemplateArgument;
  std::optional<unsigned> ModuleConstructorArgument;
  std::string ModuleField;
  /// Methods that run one forward ("operator()" for the call operator).
  std::vector<std::string> ForwardMethods;
  /// A method that runs several inner forwards after one broadcast; empty
  /// when the wrapper has none.
  std::string FusedForward;
  BroadcastSetting Broadcast;
  OncePerBackwardSetting OncePerBackward;
  /// From which LibTorch version the broadcast puts the buffers' version
  /// counters back (PyTorch 2.12.1's DDP does, with
  /// _unsafe_preserve_version_counter), so that autograd no longer notices
  /// the overwrite; unset when it never does (a plain copy_), {0, 0, 0} when
  /// it always does.
  std::optional<TorchVersion> PreservesVersionCountersFrom;
  /// The rule file this rule came from.
  std::string SourceFile;

  bool isForwardMethod(llvm::StringRef Name) const;
  bool preservesVersionCounters(TorchVersion Version) const {
    return PreservesVersionCountersFrom &&
           !(Version < *PreservesVersionCountersFrom);
  }
};

/// A method that returns its arguments in order, each module wrapped in a
/// wrapper of the rules: Hugging Face accelerate's Accelerator.prepare wraps
/// modules in DistributedDataParallel under a multi-process launch.
struct PreparerRule {
  /// The classes whose instances prepare, as their module paths spell them.
  std::vector<std::string> Classes;
  std::string Method;
  /// The wrapper each module comes back in (a WrapperRule's type).
  std::string WrapsIn;
  /// Classes of keyword holders a construction of the class may be given
  /// (in any argument): the wrapper's broadcast setter set there decides.
  std::vector<std::string> Options;
  /// The construction's keyword that takes Options (kwargs_handlers).
  std::string OptionsKeyword;
  std::string SourceFile;
};

class RuleSet {
public:
  /// The rules shipped with ddpguard (rewrite-rules/ddpguard.yaml).
  static RuleSet builtin();

  /// Adds the rules of a YAML file. Errors name the file, line and column.
  llvm::Error addFile(llvm::StringRef Path);
  llvm::Error addText(llvm::StringRef Text, llvm::StringRef BufferName);

  /// The rule for a class whose fully qualified name is QualifiedName.
  const WrapperRule *find(llvm::StringRef QualifiedName) const;
  const std::vector<WrapperRule> &wrappers() const { return Wrappers; }
  /// The preparer whose class is QualifiedClass and method Method.
  const PreparerRule *findPreparer(llvm::StringRef QualifiedClass,
                                   llvm::StringRef Method) const;
  const std::vector<PreparerRule> &preparers() const { return Preparers; }

private:
  std::vector<WrapperRule> Wrappers;
  std::vector<PreparerRule> Preparers;
};

} // namespace ddpguard

#endif
