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
  std::vector<PreparerRule> Preparers;
};

/// preserves-version-counters: true, false or the version it begins with.
struct VersionCounterPolicy {
  std::optional<TorchVersion> From;
};

struct ModuleLocation {
  std::optional<unsigned> TemplateArgument;
  std::optional<unsigned> ConstructorArgument;
  std::string Field;
};
} // namespace

LLVM_YAML_IS_SEQUENCE_VECTOR(WrapperRule)
LLVM_YAML_IS_SEQUENCE_VECTOR(PreparerRule)

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

template <> struct ScalarTraits<TorchVersion> {
  static void output(const TorchVersion &Value, void *, raw_ostream &Out) {
    Out << Value.str();
  }
  static StringRef input(StringRef Text, void *, TorchVersion &Value) {
    std::optional<TorchVersion> Parsed = TorchVersion::parse(Text);
    if (!Parsed)
      return "expected a LibTorch version such as 2.12.1";
    Value = *Parsed;
    return StringRef();
  }
  static QuotingType mustQuote(StringRef) { return QuotingType::None; }
};

template <> struct ScalarTraits<VersionCounterPolicy> {
  static void output(const VersionCounterPolicy &Value, void *,
                     raw_ostream &Out) {
    Out << (!Value.From                   ? "false"
            : *Value.From == TorchVersion() ? "true"
                                            : Value.From->str());
  }
  static StringRef input(StringRef Text, void *, VersionCounterPolicy &Value) {
    if (std::optional<bool> Flag = parseBool(Text)) {
      Value.From = *Flag ? std::optional<TorchVersion>(TorchVersion())
                         : std::nullopt;
      return StringRef();
    }
    if ((Value.From = TorchVersion::parse(Text)))
      return StringRef();
    return "expected true, false or the LibTorch version it begins with, "
           "such as 2.12.1";
  }
  static QuotingType mustQuote(StringRef) { return QuotingType::None; }
};

template <> struct MappingTraits<RenamedSetter> {
  static void mapping(IO &Io, RenamedSetter &Renamed) {
    Io.mapRequired("setter", Renamed.Setter);
    Io.mapRequired("from", Renamed.From);
  }
  static std::string validate(IO &, RenamedSetter &Renamed) {
    if (Renamed.Setter.empty())
      return "'renamed' needs a non-empty 'setter'";
    return "";
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
    Io.mapOptional("renamed", Setting.Renamed);
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
      if (Setting.Renamed && Setting.Renamed->Setter == Setting.Setter)
        return "'renamed' must name a different setter";
      return "";
    case BroadcastSetting::Kind::Field:
      if (Setting.FieldName.empty())
        return "a field setting needs 'name'";
      break;
    case BroadcastSetting::Kind::ConstructorArgument:
      // A 'setter' here is the argument's keyword (Python), and may be
      // renamed.
      if (Setting.Renamed && Setting.Setter.empty())
        return "'renamed' needs the keyword it renames in 'setter'";
      if (Setting.Renamed && Setting.Renamed->Setter == Setting.Setter)
        return "'renamed' must name a different setter";
      return "";
    }
    if (Setting.Renamed)
      return "'renamed' is for a setter: it needs kind option-builder or "
             "constructor-argument";
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
    VersionCounterPolicy Preserves;
    Io.mapOptional("preserves-version-counters", Preserves);
    Rule.PreservesVersionCountersFrom = Preserves.From;
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

template <> struct MappingTraits<PreparerRule> {
  static void mapping(IO &Io, PreparerRule &Rule) {
    Io.mapRequired("classes", Rule.Classes);
    Io.mapRequired("method", Rule.Method);
    Io.mapRequired("wraps-in", Rule.WrapsIn);
    Io.mapOptional("options", Rule.Options);
    Io.mapOptional("options-keyword", Rule.OptionsKeyword);
  }
  static std::string validate(IO &Io, PreparerRule &Rule) {
    if (failedBefore(Io))
      return "";
    if (Rule.Classes.empty() || Rule.Method.empty() || Rule.WrapsIn.empty())
      return "'classes', 'method' and 'wraps-in' must be given";
    if (Rule.Options.empty() != Rule.OptionsKeyword.empty())
      return "'options' and 'options-keyword' go together";
    return "";
  }
};

template <> struct MappingTraits<RuleFile> {
  static void mapping(IO &Io, RuleFile &File) {
    Io.mapRequired("wrappers", File.Wrappers);
    Io.mapOptional("preparers", File.Preparers);
  }
};

} // namespace yaml
} // namespace llvm

std::optional<TorchVersion> TorchVersion::parse(llvm::StringRef Text) {
  llvm::SmallVector<llvm::StringRef, 3> Parts;
  Text.trim().split(Parts, '.');
  if (Parts.size() < 2 || Parts.size() > 3)
    return std::nullopt;
  unsigned Numbers[3] = {0, 0, 0};
  for (unsigned I = 0; I < Parts.size(); ++I)
    if (Parts[I].empty() || Parts[I].getAsInteger(10, Numbers[I]))
      return std::nullopt;
  return TorchVersion{Numbers[0], Numbers[1], Numbers[2]};
}

std::string TorchVersion::str() const {
  return std::to_string(Major) + "." + std::to_string(Minor) + "." +
         std::to_string(Patch);
}

llvm::StringRef BroadcastSetting::setterAt(TorchVersion Version) const {
  if (Renamed && !(Version < Renamed->From))
    return Renamed->Setter;
  return Setter;
}

std::string BroadcastSetting::nameAt(TorchVersion Version) const {
  switch (SettingKind) {
  case Kind::OptionBuilder:
    return setterAt(Version).str();
  case Kind::Field:
    return FieldName;
  case Kind::ConstructorArgument:
    if (!Setter.empty())
      return setterAt(Version).str();
    break;
  }
  return "broadcast_buffers";
}

llvm::SmallVector<llvm::StringRef, 2> BroadcastSetting::setters() const {
  llvm::SmallVector<llvm::StringRef, 2> Names;
  if (Renamed)
    Names.push_back(Renamed->Setter);
  Names.push_back(Setter);
  return Names;
}

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
  for (PreparerRule &Rule : File.Preparers) {
    if (!find(Rule.WrapsIn) &&
        llvm::none_of(File.Wrappers, [&](const WrapperRule &W) {
          return W.Type == Rule.WrapsIn;
        }))
      return llvm::createStringError(
          std::errc::invalid_argument,
          "%s: preparer '%s.%s' wraps in '%s', which no wrapper rule names",
          BufferName.str().c_str(), Rule.Classes.front().c_str(),
          Rule.Method.c_str(), Rule.WrapsIn.c_str());
    Rule.SourceFile = BufferName.str();
    Preparers.push_back(std::move(Rule));
  }
  return llvm::Error::success();
}

const PreparerRule *RuleSet::findPreparer(llvm::StringRef QualifiedClass,
                                          llvm::StringRef Method) const {
  for (const PreparerRule &Rule : llvm::reverse(Preparers))
    if (Rule.Method == Method && llvm::is_contained(Rule.Classes, QualifiedClass))
      return &Rule;
  return nullptr;
}

const WrapperRule *RuleSet::find(llvm::StringRef QualifiedName) const {
  // Later files override earlier ones, so users can redefine a wrapper.
  for (const WrapperRule &Rule : llvm::reverse(Wrappers))
    if (Rule.Type == QualifiedName)
      return &Rule;
  return nullptr;
}
