//===- RuleSet.h - How DDP wrappers are recognised and fixed --------------===//
//
// Rule files (rewrite-rules/*.yaml) describe each DDP wrapper type: its
// forward entry points, where the wrapped module is, how broadcast_buffers is
// set at construction, the name of its fused forward and the setter of its
// once-per-backward buffer policy. See
// rewrite-rules/README.md for the format.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_RULES_RULESET_H
#define DDPGUARD_RULES_RULESET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <vector>

namespace ddpguard {

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
  /// Field: the field's name.
  std::string FieldName;
  /// The value when nothing sets it.
  bool Default = true;
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
  /// The rule file this rule came from.
  std::string SourceFile;

  bool isForwardMethod(llvm::StringRef Name) const;
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

private:
  std::vector<WrapperRule> Wrappers;
};

} // namespace ddpguard

#endif
