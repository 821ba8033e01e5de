//===- RuleSet.cpp - Reading rule files with llvm::yaml -------------------===//

#include "RuleSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLTraits.h"
#include "llvm/Support/raw_ostream.h"

using namespace ddpguard;

namespace {
struct RuleFile {
  std::vector<WrapperRule> Wrappers;
};

struct ModuleLocation {
  std::optional<unsigned> TemplateArgument;
  std::optional<unsigned> ConstructorArgument;
  std::string Field;
};
} // namespace

LLVM_YAML_IS_SEQUENCE_VECTOR(WrapperRule)

namespace llvm {
namespace yaml {

template <> struct ScalarEnumerationTraits<BroadcastSetting::Kind> {
  static void enumeration(IO &Io, BroadcastSetting::Kind &Value) {
    Io.enumCase(Value, "option-builder", BroadcastSetting::Kind::OptionBuilder);
    Io.enumCase(Value, "constructor-argument",
                BroadcastSetting::Kind::ConstructorArgument);
    Io.enumCase(Value, "field", BroadcastSetting::Kind::Field);
  }
};

/// An earlier error stopped the reading (rules are only read, through
/// yaml::Input).
static bool failedBefore(IO &Io) {
  return !Io.outputting() && static_cast<Input &>(Io).error();
}

template <> struct MappingTraits<BroadcastSetting> {
  static void mapping(IO &Io, BroadcastSetting &Setting) {
    Io.mapRequired("kind", Setting.SettingKind);
    Io.mapOptional("argument", Setting.Argument, 0u);
    Io.mapOptional("options-type", Setting.OptionsType);
    Io.mapOptional("setter", Setting.Setter);
    Io.mapOptional("name", Setting.FieldName);
    Io.mapOptional("default", Setting.Default, true);
  }
  static std::string validate(IO &Io, BroadcastSetting &Setting) {
    // The rest of the mapping was not read: judging it adds bogus errors.
    if (failedBefore(Io))
      return "";
    switch (Setting.SettingKind) {
    case BroadcastSetting::Kind::OptionBuilder:
      if (Setting.OptionsType.empty() || Setting.Setter.empty())
        return "an option-builder setting needs 'options-type' and 'setter'";
      break;
    case BroadcastSetting::Kind::Field:
      if (Setting.FieldName.empty())
        return "a field setting needs 'name'";
      break;
    case BroadcastSetting::Kind::ConstructorArgument:
      break;
    }
    return "";
  }
};

template <> struct MappingTraits<OncePerBackwardSetting> {
  static void mapping(IO &Io, OncePerBackwardSetting &Setting) {
    Io.mapRequired("setter", Setting.Setter);
    Io.mapRequired("value", Setting.Value);
  }
  static std::string validate(IO &Io, OncePerBackwardSetting &Setting) {
    if (failedBefore(Io))
      return "";
    if (Setting.Setter.empty() || Setting.Value.empty())
      return "'once-per-backward' needs a non-empty 'setter' and 'value'";
    return "";
  }
};

template <> struct MappingTraits<ModuleLocation> {
  static void mapping(IO &Io, ModuleLocation &Location) {
    Io.mapOptional("template-argument", Location.TemplateArgument);
    Io.mapOptional("constructor-argument", Location.ConstructorArgument);
    Io.mapOptional("field", Location.Field);
  }
  static std::string validate(IO &Io, ModuleLocation &Location) {
    if (failedBefore(Io))
      return "";
    int Count = Location.TemplateArgument.has_value() +
                Location.ConstructorArgument.has_value() +
                !Location.Field.empty();
    if (Count != 1)
      return "'module' needs exactly one of 'template-argument', "
             "'constructor-argument' or 'field'";
    return "";
  }
};

template <> struct MappingTraits<WrapperRule> {
  static void mapping(IO &Io, WrapperRule &Rule) {
    Io.mapRequired("type", Rule.Type);
    ModuleLocation Module;
    Io.mapRequired("module", Module);
    Rule.ModuleTemplateArgument = Module.TemplateArgument;
    Rule.ModuleConstructorArgument = Module.ConstructorArgument;
    Rule.ModuleField = Module.Field;
    Io.mapRequired("forward-methods", Rule.ForwardMethods);
    Io.mapOptional("fused-forward", Rule.FusedForward);
    Io.mapRequired("broadcast-buffers", Rule.Broadcast);
    Io.mapOptional("once-per-backward", Rule.OncePerBackward);
  }
  static std::string validate(IO &Io, WrapperRule &Rule) {
    if (failedBefore(Io))
      return "";
    if (Rule.Type.empty())
      return "'type' must name the wrapper class";
    if (Rule.ForwardMethods.empty())
      return "'forward-methods' must list at least one method";
    if (Rule.OncePerBackward.available() &&
        Rule.Broadcast.SettingKind != BroadcastSetting::Kind::OptionBuilder)
      return "'once-per-backward' is set on the options object: it needs "
             "'broadcast-buffers' of kind option-builder";
    return "";
  }
};

template <> struct MappingTraits<RuleFile> {
  static void mapping(IO &Io, RuleFile &File) {
    Io.mapRequired("wrappers", File.Wrappers);
  }
};

} // namespace yaml
} // namespace llvm

bool WrapperRule::isForwardMethod(llvm::StringRef Name) const {
  return llvm::is_contained(ForwardMethods, Name) || Name == FusedForward;
}

static const char BuiltinRules[] =
#include "BuiltinRules.inc"
    ;

RuleSet RuleSet::builtin() {
  RuleSet Rules;
  llvm::cantFail(Rules.addText(BuiltinRules, "rewrite-rules/ddpguard.yaml"));
  return Rules;
}

llvm::Error RuleSet::addFile(llvm::StringRef Path) {
  auto Buffer = llvm::MemoryBuffer::getFile(Path);
  if (!Buffer)
    return llvm::createStringError(Buffer.getError(),
                                   "cannot read rule file '%s': %s",
                                   Path.str().c_str(),
                                   Buffer.getError().message().c_str());
  return addText((*Buffer)->getBuffer(), Path);
}

llvm::Error RuleSet::addText(llvm::StringRef Text, llvm::StringRef BufferName) {
  std::string Messages;
  llvm::raw_string_ostream MessageStream(Messages);
  auto Collect = [](const llvm::SMDiagnostic &Diag, void *Context) {
    Diag.print(nullptr, *static_cast<llvm::raw_string_ostream *>(Context),
               /*ShowColors=*/false);
  };
  RuleFile File;
  llvm::yaml::Input Input(llvm::MemoryBufferRef(Text, BufferName), nullptr,
                          Collect, &MessageStream);
  Input >> File;
  if (Input.error()) {
    MessageStream.flush();
    if (Messages.empty())
      Messages = (BufferName + ": malformed rule file").str();
    return llvm::createStringError(Input.error(), "%s",
                                   llvm::StringRef(Messages).rtrim().str().c_str());
  }
  for (WrapperRule &Rule : File.Wrappers) {
    Rule.SourceFile = BufferName.str();
    Wrappers.push_back(std::move(Rule));
  }
  return llvm::Error::success();
}

const WrapperRule *RuleSet::find(llvm::StringRef QualifiedName) const {
  // Later files override earlier ones, so users can redefine a wrapper.
  for (const WrapperRule &Rule : llvm::reverse(Wrappers))
    if (Rule.Type == QualifiedName)
      return &Rule;
  return nullptr;
}
