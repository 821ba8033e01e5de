//===- PythonFiles.cpp ----------------------------------------------------===//

#include "PythonFiles.h"
#include "PythonProject.h"
#include "PythonFrontend/PythonFrontend.h"
#include "RegularFile.h"
#include "Tidy/CheckNames.h"
#include "Tidy/MultipleForwardBeforeBackwardCheck.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"

using namespace llvm;
using clang::tidy::ClangTidyError;

namespace ddpguard {

static constexpr llvm::StringLiteral CheckName =
    checks::MultipleForwardBeforeBackward;
/// The rule the Python frontend's findings come from.
static const char PyTorchDDP[] = "torch.nn.parallel.DistributedDataParallel";

bool isPythonFile(StringRef Path) {
  // Stubs too, as ruff takes them and pre-commit's "python" type names them.
  StringRef Extension = sys::path::extension(Path);
  return Extension == ".py" || Extension == ".pyi";
}

/// "2.11.0", "2.11.0+cu130", "2.12.0a0": the release part.
static std::optional<TorchVersion> releaseOf(StringRef Text) {
  Regex Release("^([0-9]+\\.[0-9]+(\\.[0-9]+)?)");
  SmallVector<StringRef, 3> Match;
  if (!Release.match(Text.trim(), &Match))
    return std::nullopt;
  return TorchVersion::parse(Match[1]);
}

/// The exact torch pin of a requirements file, pyproject.toml or lock file.
static std::optional<TorchVersion> pinIn(StringRef Name, StringRef Text) {
  // One pattern a format: exact pins only, a range judges nothing.
  const char *Pattern = nullptr;
  if (Name.starts_with("requirements") && Name.ends_with(".txt"))
    Pattern = "(^|\n)[ \t]*torch(\\[[^]]*\\])?[ \t]*==[ \t]*([0-9][0-9.]*)";
  else if (Name == "pyproject.toml")
    Pattern = "([\"']torch(\\[[^]]*\\])?[ \t]*==[ \t]*([0-9][0-9.]*)|"
              "(^|\n)[ \t]*torch[ \t]*=[ \t]*[\"']=?=?([0-9][0-9.]*)[\"'])";
  else if (Name == "uv.lock" || Name == "poetry.lock" || Name == "pdm.lock")
    Pattern = "name = \"torch\"\nversion = \"([0-9][0-9.]*)\"";
  else if (Name == "Pipfile.lock")
    Pattern = "\"torch\": \\{[^}]*\"version\": \"==([0-9][0-9.]*)\"";
  if (!Pattern)
    return std::nullopt;
  SmallVector<StringRef, 6> Match;
  if (!Regex(Pattern).match(Text, &Match))
    return std::nullopt;
  for (StringRef Group : llvm::reverse(Match))
    if (!Group.empty() && isDigit(Group.front()))
      return releaseOf(Group);
  return std::nullopt;
}

JudgedTorch TorchVersionJudge::judge(StringRef File, const PythonConfig &Config,
                                     std::optional<FileProblem> &Problem) {
  if (Override)
    return {*Override, "torch " + Override->str() + ", from --torch-version"};
  if (!Python.empty()) {
    if (!PythonAsked) {
      PythonAsked = true;
      SmallString<128> Output;
      int FD;
      if (!sys::fs::createTemporaryFile("ddpguard-torch", "txt", FD, Output)) {
        sys::fs::closeFile(FD);
        FileRemover Remove(Output);
        std::optional<StringRef> Redirects[] = {std::nullopt, StringRef(Output),
                                                StringRef("")};
        StringRef Args[] = {Python, "-c",
                            "import sys, torch; sys.stdout.write(torch.__version__)"};
        std::string Error;
        int Status = sys::ExecuteAndWait(Python, Args, std::nullopt, Redirects,
                                         /*SecondsToWait=*/120, 0, &Error);
        auto Text = MemoryBuffer::getFile(Output);
        std::optional<TorchVersion> Version;
        if (Status == 0 && Text)
          Version = releaseOf((*Text)->getBuffer());
        if (Version)
          FromPython = JudgedTorch{*Version, "torch " + Version->str() +
                                                 ", the torch of " + Python};
        else
          Problem = FileProblem{
              Python, "--python: could not read torch's version from this "
                      "interpreter (" +
                          (Error.empty() ? "exit status " + std::to_string(Status)
                                         : Error) +
                          "); install torch there or pass --torch-version"};
      }
    }
    if (FromPython)
      return *FromPython;
  }
  if (Config.Torch)
    return {*Config.Torch,
            "torch " + Config.Torch->str() + ", from " + Config.Origin};
  SmallString<256> Dir(sys::path::parent_path(File));
  const char *Names[] = {"uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock",
                         "pyproject.toml"};
  while (!Dir.empty()) {
    std::vector<std::string> Candidates(std::begin(Names), std::end(Names));
    std::error_code EC;
    for (sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC;
         It.increment(EC)) {
      StringRef Name = sys::path::filename(It->path());
      if (Name.starts_with("requirements") && Name.ends_with(".txt"))
        Candidates.push_back(Name.str());
    }
    for (const std::string &Name : Candidates) {
      SmallString<256> Path(Dir);
      sys::path::append(Path, Name);
      RegularFileRead Text = readRegularFile(Path);
      if (!Text)
        continue;
      if (std::optional<TorchVersion> Pin =
              pinIn(Name, Text.Buffer->getBuffer()))
        return {*Pin, "torch " + Pin->str() + ", pinned in " +
                          workingPath(Path)};
    }
    StringRef Parent = sys::path::parent_path(Dir);
    if (Parent == Dir)
      break;
    Dir = Parent;
  }
  return {OldestSupportedTorch,
          "torch " + OldestSupportedTorch.str() +
              ", the oldest supported (no exact torch pin found; pass "
              "--torch-version or --python)"};
}

static clang::tooling::DiagnosticMessage message(const std::string &Text,
                                                 const std::string &File,
                                                 unsigned Offset) {
  clang::tooling::DiagnosticMessage Message(Text);
  Message.FilePath = File;
  Message.FileOffset = Offset;
  return Message;
}

/// Whether the line holding Offset carries a noqa comment for the check, as
/// flake8 and ruff read one: `#`, any spaces, `noqa` in any case; bare it
/// suppresses every check, with `:` and codes (commas or spaces between
/// them, any case) only those.
static bool suppressed(StringRef Text, unsigned Offset,
                       StringRef Check = CheckName) {
  size_t End = Text.find('\n', Offset);
  StringRef Line = Text.slice(Text.rfind('\n', Offset) + 1,
                              End == StringRef::npos ? Text.size() : End);
  for (size_t Hash = Line.find('#'); Hash != StringRef::npos;
       Hash = Line.find('#', Hash + 1)) {
    StringRef Rest = Line.drop_front(Hash + 1).ltrim(" \t");
    if (!Rest.starts_with_insensitive("noqa"))
      continue;
    Rest = Rest.drop_front(4);
    StringRef Codes = Rest.ltrim(" \t");
    if (!Codes.consume_front(":")) {
      // `# noqa`, `# noqa  # why`; not `# noqanything`.
      if (Rest.empty() || isSpace(Rest.front()) || Rest.front() == '#')
        return true;
      continue;
    }
    SmallVector<StringRef, 4> Items;
    SplitString(Codes, Items, ", \t\r");
    if (llvm::any_of(Items, [&](StringRef Code) {
          return Code.equals_insensitive(Check);
        }))
      return true;
  }
  return false;
}

/// Checks the sources (file, text) of one run together.
static std::map<std::string, unsigned>
checkPythonTexts(llvm::ArrayRef<std::pair<std::string, StringRef>> Texts,
                 const RuleSet &Rules, TorchVersionJudge &Judge,
                 PythonConfigs &Configs, PythonFixMode FixMode,
                 std::vector<Finding> &Findings,
                 std::vector<FileProblem> &Errors, ContentStamps *Read) {
  std::map<std::string, unsigned> SyntaxErrors;
  std::vector<JudgedTorch> Judgements;
  std::vector<python::SourceFile> Sources;
  for (const auto &[File, Text] : Texts) {
    const PythonConfig &Config = Configs.forFile(File);
    std::optional<FileProblem> Problem;
    Judgements.push_back(Judge.judge(File, Config, Problem));
    if (Problem)
      Errors.push_back(*Problem);
    python::CheckOptions Options;
    Options.Version = Judgements.back().Version;
    Options.AssumeModulesHaveBuffers = Config.AssumeModulesHaveBuffers;
    Sources.push_back({File, Text, Options});
  }
  PythonProject Project = readPythonProject(Texts);
  for (size_t I = 0; I < Texts.size(); ++I)
    Sources[I].SourceRoots = Project.SourceRoots[I];
  for (size_t I = 0; I < Project.Context.size(); ++I) {
    python::SourceFile Context{Project.Context[I].Path,
                               Project.Context[I].Text->getBuffer(),
                               Sources.empty() ? python::CheckOptions()
                                               : Sources.front().Options};
    Context.Context = true;
    Context.SourceRoots = Project.ContextRoots[I];
    // A broadcast fix edits the construction, which may be in a context
    // file, as it does when the folder is checked.
    if (Read)
      Read->record(resolvedPath(Context.Path),
                   ContentStamp::of(Context.Source));
    Sources.push_back(std::move(Context));
  }
  std::vector<python::CheckResult> Results =
      python::checkSources(Sources, Rules);
  for (size_t I = 0; I < Texts.size(); ++I) {
    const std::string &File = Sources[I].Path;
    StringRef Text = Sources[I].Source;
    const JudgedTorch &Judged = Judgements[I];
    const python::CheckResult &Result = Results[I];
    SyntaxErrors[File] = Result.SyntaxErrors.size();
    // The parser reads Python 3.8 to 3.14; what it cannot read may still be
    // Python, so the message does not say the user is wrong.
    for (const python::Position &At : Result.SyntaxErrors)
      Errors.push_back(
          {File,
           "cannot parse line " + std::to_string(At.Line) + ", column " +
               std::to_string(At.Column) +
               " (a syntax error, or Python newer than ddpguard reads); the "
               "rest of the file was checked",
           At.Offset});
    if (Result.TooDeep)
      Errors.push_back(
          {File,
           "nesting deeper than " + std::to_string(python::MaxNestingDepth) +
               " levels at line " + std::to_string(Result.TooDeep->Line) +
               "; this file was not checked (the other files were)",
           Result.TooDeep->Offset});
    for (const python::Finding &F : Result.Findings) {
      if (!Configs.reports(File, CheckName) ||
          suppressed(Text, F.Second.Offset))
        continue;
      Finding E(ClangTidyError(CheckName, ClangTidyError::Warning, "", false));
      E.Message = message(
          "forward call on DDP-wrapped '" + F.Object +
              "' before the backward of the forward at line " +
              std::to_string(F.First.Line) +
              ": DDP broadcasts buffers before every forward and overwrites "
              "the buffers that forward saved for backward",
          File, F.Second.Offset);
      auto Note = [&](const std::string &Message, const python::Position &At,
                      const std::string &In, NoteKind Kind = NoteKind::Place,
                      NoteRole Role = NoteRole::None) {
        E.addNote(message(Message, In, At.Offset), Kind, Role);
      };
      if (F.SameForwardInALoop)
        Note("the same forward ran in an earlier iteration of a loop; its "
             "saved buffers are overwritten",
             F.Second, File, NoteKind::Place, NoteRole::EarlierForward);
      else if (F.FirstBypasses)
        Note("earlier forward on '" + F.Object + ".module' is here, past "
                 "DDP: it saved the buffers without a broadcast, and they "
                 "are overwritten",
             F.First, File, NoteKind::Place, NoteRole::EarlierForward);
      else
        Note("earlier forward on '" + F.Object +
                 "' is here; its saved buffers are overwritten",
             F.First, File, NoteKind::Place, NoteRole::EarlierForward);
      Note("the backward that fails is here", F.Backward, File);
      const WrapperRule *Rule = Rules.find(PyTorchDDP);
      Note("'" + F.Object + "' is constructed here and broadcasts buffers "
               "before every forward ('" +
               Rule->Broadcast.nameAt(Judged.Version) +
               "' is not set to False)",
           F.Construction, F.ConstructionFile);
      if (!F.BuffersAssumption.empty())
        Note("assuming the forward saves a buffer for backward: " +
                 F.BuffersAssumption +
                 " (assume-modules-have-buffers = false in [tool.ddpguard] "
                 "reports no such module)",
             F.Construction, F.ConstructionFile, NoteKind::Assumption);
      Note("judged by " + Judged.Description, F.Second, File,
           NoteKind::JudgedBy);
      if (const std::optional<TorchVersion> &From =
              Rule->PreservesVersionCountersFrom)
        Note("or upgrade to torch " + From->str() +
                 " or later: there DistributedDataParallel puts the buffers' "
                 "version counters back after its broadcast, and these "
                 "forwards no longer fail",
             F.Second, File, NoteKind::Alternative);
      auto Apply = [&](const python::Edit &Fix, const std::string &In) {
        cantFail(E.Message.Fix[In].add(clang::tooling::Replacement(
            In, Fix.Offset, Fix.Length, Fix.Text)));
      };
      std::string Behaviour =
          ": each rank then keeps its own running statistics, no longer "
          "rank 0's (BatchNorm's running_mean and running_var)";
      std::string Broadcast =
          tidy::MultipleForwardBeforeBackwardCheck::broadcastFixNote(
              F.BroadcastKeyword) +
          Behaviour;
      // Wrapping the first of three forwards leaves the third broadcasting.
      std::string NoSyncWithheld = F.NoSyncWithheld;
      if (Result.Findings.size() > 1 &&
          llvm::count_if(Result.Findings, [&](const python::Finding &Other) {
            return Other.Function == F.Function && Other.Object == F.Object;
          }) > 1)
        NoSyncWithheld = "more than two forwards on '" + F.Object +
                         "' run before the backward";
      std::string NoSync = "runs the first forward inside 'with " + F.Object +
                           ".no_sync():', which still broadcasts rank 0's "
                           "buffers; the later forwards before the backward "
                           "then do not, and the gradients and rank 0's "
                           "parameters and buffers are those PyTorch's DDP "
                           "computes from 2.12.1";
      switch (FixMode) {
      case PythonFixMode::Broadcast:
        if (F.BroadcastWithheld.empty()) {
          Apply(F.BroadcastFix, F.ConstructionFile);
          E.FixTitle =
              "Set " + F.BroadcastKeyword + "=False at the DDP construction";
          E.Applicability = FixApplicability::Unsafe;
          Note(Broadcast, F.Second, File, NoteKind::FixEffect);
        } else {
          Note("no fix is offered: " + F.BroadcastWithheld + Behaviour,
               F.Second, File, NoteKind::NoFix);
        }
        if (NoSyncWithheld.empty())
          Note("or keep the buffers in sync: --fix-mode=once-per-backward " +
                   NoSync,
               F.Second, File, NoteKind::Alternative);
        break;
      case PythonFixMode::NoSync:
        if (NoSyncWithheld.empty()) {
          Apply(F.NoSyncFix, File);
          E.FixTitle = "Run the first forward inside " + F.Object +
                       ".no_sync()";
          E.Applicability = FixApplicability::Safe;
          Note("the fix " + NoSync, F.Second, File, NoteKind::FixEffect);
        } else {
          Note("cannot run the first forward inside no_sync(): " +
                   NoSyncWithheld,
               F.Second, File, NoteKind::NoFix);
        }
        Note("or set '" + F.BroadcastKeyword + "' to false (--fix-mode=" +
                 "broadcast), which changes behaviour" + Behaviour,
             F.Second, File, NoteKind::Alternative);
        break;
      case PythonFixMode::None:
        Note("fusing the forwards is for C++ only: use --fix-mode=broadcast "
             "or --fix-mode=once-per-backward",
             F.Second, File, NoteKind::NoFix);
        break;
      }
      Findings.push_back(std::move(E));
    }
    for (const python::StepFinding &F : Result.Steps) {
      StringRef Check = checks::OptimizerStepBeforeBackward;
      if (!Configs.reports(File, Check) ||
          suppressed(Text, F.Step.Offset, Check))
        continue;
      Finding E(ClangTidyError(Check, ClangTidyError::Warning, "", false));
      E.Message = message(
          "step of '" + F.Optimizer + "' writes the parameters of '" +
              F.Module + "' in place, which the forward at line " +
              std::to_string(F.Forward.Line) +
              " saved for backward; the backward at line " +
              std::to_string(F.Backward.Line) +
              " through that forward will fail",
          File, F.Step.Offset);
      auto Note = [&](const std::string &Message, const python::Position &At,
                      NoteKind Kind = NoteKind::Place) {
        E.addNote(message(Message, File, At.Offset), Kind);
      };
      Note("the forward that saved the parameters of '" + F.Module + "'",
           F.Forward);
      Note("the backward that fails", F.Backward);
      if (F.Assumed)
        Note("assuming that a step of '" + F.OptimizerClass +
                 "' bumps the version counters of the parameters it updates, "
                 "as every torch.optim step does unless fused=True",
             F.Step, NoteKind::Assumption);
      Note("no fix is offered: moving the step after the backward at line " +
               std::to_string(F.Backward.Line) +
               " would make it use that backward's gradients too, and "
               "recomputing the forward after the step would change what the "
               "later loss sees; both change what training computes",
           F.Step, NoteKind::NoFix);
      Note("on every supported torch: torch.optim steps bump the version "
           "counters of the parameters they update unless fused=True "
           "(measured on 2.11.0 and 2.15.0)",
           F.Step, NoteKind::EveryTorch);
      Findings.push_back(std::move(E));
    }
    for (const python::ValueWriteFinding &F : Result.ValueWrites) {
      StringRef Check = checks::InPlaceWriteBeforeBackward;
      if (!Configs.reports(File, Check) ||
          suppressed(Text, F.Write.Offset, Check))
        continue;
      Finding E(ClangTidyError(Check, ClangTidyError::Warning, "", false));
      std::string Saver = "'" + F.Saver + "' at line " +
                          std::to_string(F.Saved.Line);
      std::string Failing =
          !F.CarriedState.empty()
              ? " in the previous call: this forward returns '" + F.Tensor +
                    "' and gets it back as '" + F.CarriedState +
                    "'; a backward through the results of both calls will "
                    "fail"
          : F.ThroughResult
              ? std::string("; a backward through the result of this forward "
                            "will fail")
              : "; the backward at line " + std::to_string(F.Backward.Line) +
                    " through it will fail";
      E.Message = message("'" + F.Operation + "' writes '" + F.Tensor +
                              "' in place, which " + Saver +
                              " saved for backward" + Failing,
                          File, F.Write.Offset);
      auto Note = [&](const std::string &Message, const python::Position &At,
                      NoteKind Kind = NoteKind::Place) {
        E.addNote(message(Message, File, At.Offset), Kind);
      };
      Note("'" + F.Saver + "' saved the tensor for backward here, and the "
           "backward checks that its version counter has not moved since",
           F.Saved);
      Note(!F.CarriedState.empty()
               ? "the forward returns the state here; a caller that passes "
                 "it back as '" + F.CarriedState + "' writes in the next "
                 "call what this call saved"
           : F.ThroughResult
               ? "the forward returns a value computed through it: the "
                 "backward of whoever trains this module fails"
               : "the backward that fails is here",
           F.Backward);
      if (F.FixWithheld.empty()) {
        for (const python::Edit &Fix : F.Fix)
          cantFail(E.Message.Fix[File].add(clang::tooling::Replacement(
              File, Fix.Offset, Fix.Length, Fix.Text)));
        if (!F.Fix.empty()) {
          E.FixTitle = "Write it out of place";
          E.Applicability = FixApplicability::Safe;
        }
      } else
        Note("no fix is offered: " + F.FixWithheld, F.Write, NoteKind::NoFix);
      Note("on every supported torch: autograd checks the version counter of "
           "each tensor it saved (measured on 2.11.0 and 2.15.0)",
           F.Write, NoteKind::EveryTorch);
      Findings.push_back(std::move(E));
    }
    for (const python::SilentWriteFinding &F : Result.SilentWrites) {
      StringRef Check = checks::SilentWriteBeforeBackward;
      if (!Configs.reports(File, Check) ||
          suppressed(Text, F.Write.Offset, Check))
        continue;
      Finding E(ClangTidyError(Check, ClangTidyError::Warning, "", false));
      using Way = python::SilentWriteFinding::Way;
      std::string What =
          F.WrittenBy == Way::FusedStep
              ? F.Operation + " (fused=True) writes the parameters of '" +
                    F.Module + "'"
          : F.WrittenBy == Way::CheckpointedStep
              ? F.Operation + " writes the parameters of '" + F.Module + "'"
              : "'" + F.Operation + "' writes '" + F.Tensor + "'" +
                    (F.Module.empty()
                         ? std::string()
                         : " (the parameters of '" + F.Module + "')");
      std::string How =
          F.WrittenBy == Way::FusedStep
              ? "a fused step does not bump the version counter"
          : F.WrittenBy == Way::Data
              ? "a write through .data does not bump the version counter"
          : F.WrittenBy == Way::CheckpointedStep
              ? "activation checkpointing recomputes that forward in the "
                "backward and checks no version counter"
              : "_unsafe_preserve_version_counter keeps the version counter";
      std::string Saver = F.Saver.empty()
                              ? "the forward at line " +
                                    std::to_string(F.Saved.Line)
                              : "'" + F.Saver + "' at line " +
                                    std::to_string(F.Saved.Line);
      E.Message = message(
          What + " in place, which " + Saver + " saved for backward; " +
              How + ", so " +
              (F.ThroughResult
                   ? std::string("a backward through the result of this "
                                 "forward")
                   : "the backward at line " +
                         std::to_string(F.Backward.Line)) +
              " raises nothing and computes gradients from values the "
              "forward did not see",
          File, F.Write.Offset);
      auto Note = [&](const std::string &Message, const python::Position &At,
                      NoteKind Kind = NoteKind::Place) {
        E.addNote(message(Message, File, At.Offset), Kind);
      };
      Note("saved for backward here", F.Saved);
      Note(F.ThroughResult
               ? "the forward returns a value computed through it: the "
                 "backward of whoever trains this module reads the written "
                 "values"
               : "this backward reads the written values without an error",
           F.Backward);
      Note("no fix is offered: " + F.FixWithheld, F.Write, NoteKind::NoFix);
      Note(F.WrittenBy == Way::CheckpointedStep
               ? "on every supported torch: torch.utils.checkpoint, reentrant "
                 "or not, recomputes the forward in the backward from the "
                 "parameters as they are then (measured on 2.11.0 and "
                 "2.15.0, test/python/silent)"
               : "on every supported torch: autograd sees no write that "
                 "leaves the version counter as it was (measured on 2.11.0 "
                 "and 2.15.0, test/python/silent)",
           F.Write, NoteKind::EveryTorch);
      Findings.push_back(std::move(E));
    }
  }
  return SyntaxErrors;
}

unsigned checkPythonSource(const std::string &File, StringRef Text,
                           const RuleSet &Rules, TorchVersionJudge &Judge,
                           PythonConfigs &Configs, PythonFixMode FixMode,
                           std::vector<Finding> &Findings,
                           std::vector<FileProblem> &Errors) {
  return checkPythonTexts({{File, Text}}, Rules, Judge, Configs, FixMode,
                          Findings, Errors, /*Read=*/nullptr)[File];
}

std::map<std::string, unsigned>
checkPythonFiles(const std::vector<std::string> &Files, const RuleSet &Rules,
                 TorchVersionJudge &Judge, PythonConfigs &Configs,
                 PythonFixMode FixMode,
                 std::vector<Finding> &Findings,
                 std::vector<FileProblem> &Errors, ContentStamps &Read) {
  // Every file first, so that names one imports from another are followed.
  std::vector<std::unique_ptr<MemoryBuffer>> Buffers;
  std::vector<std::pair<std::string, StringRef>> Texts;
  for (const std::string &File : Files) {
    RegularFileRead Buffer = readRegularFile(File);
    if (!Buffer) {
      Errors.push_back({File, Buffer.missing() ? "no such file or directory"
                                               : Buffer.problem()});
      continue;
    }
    StringRef Text = Buffer.Buffer->getBuffer();
    Read.record(resolvedPath(File), ContentStamp::of(Text));
    Texts.emplace_back(File, Text);
    Buffers.push_back(std::move(Buffer.Buffer));
  }
  return checkPythonTexts(Texts, Rules, Judge, Configs, FixMode, Findings,
                          Errors, &Read);
}

} // namespace ddpguard
