//===- Report.cpp ---------------------------------------------------------===//

#include "Report.h"
#include "Tidy/MultipleForwardBeforeBackwardCheck.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <algorithm>

using clang::tidy::ClangTidyError;
using clang::tooling::DiagnosticMessage;
namespace json = llvm::json;

namespace ddpguard {

static const char CheckName[] = "ddp-multiple-forward-before-backward";

const DiagnosticMessage *broadcastFixNote(const ClangTidyError &F) {
  if (F.Message.Fix.empty())
    return nullptr;
  for (const DiagnosticMessage &Note : F.Notes)
    if (llvm::StringRef(Note.Message)
            .starts_with(tidy::MultipleForwardBeforeBackwardCheck::BroadcastFixNote))
      return &Note;
  return nullptr;
}

std::pair<unsigned, unsigned> LineTable::position(const std::string &File,
                                                  unsigned Offset) {
  auto [It, Inserted] = LineStarts.try_emplace(File);
  if (Inserted) {
    It->second.push_back(0);
    if (auto Buffer = llvm::MemoryBuffer::getFile(File)) {
      llvm::StringRef Text = (*Buffer)->getBuffer();
      for (size_t I = 0; I < Text.size(); ++I)
        if (Text[I] == '\n')
          It->second.push_back(I + 1);
    }
  }
  const std::vector<unsigned> &Starts = It->second;
  auto Line = std::upper_bound(Starts.begin(), Starts.end(), Offset) - 1;
  return {static_cast<unsigned>(Line - Starts.begin()) + 1,
          Offset - *Line + 1};
}

static void writeMessage(llvm::raw_ostream &OS, const DiagnosticMessage &M,
                         llvm::StringRef Level, llvm::StringRef Suffix,
                         LineTable &Lines) {
  auto [Line, Column] = Lines.position(M.FilePath, M.FileOffset);
  OS << M.FilePath << ":" << Line << ":" << Column << ": " << Level << ": "
     << M.Message << Suffix << "\n";
}

/// The warning option of a compiler warning: clang-diagnostic-unused-variable
/// is -Wunused-variable; a warning without an option has none.
static std::string warningOption(const ClangTidyError &W) {
  llvm::StringRef Name(W.DiagnosticName);
  if (!Name.consume_front("clang-diagnostic-") || Name == "warning")
    return "";
  return ("-W" + Name).str();
}

static void writeTextItem(llvm::raw_ostream &OS, const ClangTidyError &F,
                          llvm::StringRef Tag, LineTable &Lines) {
  writeMessage(OS, F.Message, "warning",
               Tag.empty() ? std::string() : (" [" + Tag + "]").str(), Lines);
  for (const DiagnosticMessage &Note : F.Notes)
    writeMessage(OS, Note, "note", "", Lines);
}

void writeText(llvm::raw_ostream &OS, const RunReport &Report,
               LineTable &Lines) {
  for (const ClangTidyError &F : Report.Findings)
    writeTextItem(OS, F, F.DiagnosticName, Lines);
  for (const ClangTidyError &W : Report.CompilerWarnings)
    writeTextItem(OS, W, warningOption(W), Lines);
}

static json::Object location(const DiagnosticMessage &M, LineTable &Lines) {
  auto [Line, Column] = Lines.position(M.FilePath, M.FileOffset);
  return json::Object{{"file", M.FilePath},
                      {"offset", M.FileOffset},
                      {"line", Line},
                      {"column", Column}};
}

static json::Array replacements(const DiagnosticMessage &M) {
  json::Array Result;
  for (const auto &[File, Replacements] : M.Fix)
    for (const clang::tooling::Replacement &R : Replacements)
      Result.push_back(json::Object{{"file", R.getFilePath().str()},
                                    {"offset", R.getOffset()},
                                    {"length", R.getLength()},
                                    {"replacement", R.getReplacementText().str()}});
  return Result;
}

void writeJson(llvm::raw_ostream &OS, const RunReport &Report,
               LineTable &Lines) {
  json::Array Items;
  for (const ClangTidyError &F : Report.Findings) {
    json::Object Item = location(F.Message, Lines);
    Item["check"] = F.DiagnosticName;
    Item["message"] = F.Message.Message;
    json::Array Notes;
    for (const DiagnosticMessage &Note : F.Notes) {
      json::Object N = location(Note, Lines);
      N["message"] = Note.Message;
      N["fix"] = replacements(Note);
      Notes.push_back(std::move(N));
    }
    Item["notes"] = std::move(Notes);
    Item["fix"] = replacements(F.Message);
    Items.push_back(std::move(Item));
  }
  json::Array Warnings;
  for (const ClangTidyError &W : Report.CompilerWarnings) {
    json::Object Item = location(W.Message, Lines);
    Item["option"] = warningOption(W);
    Item["message"] = W.Message.Message;
    json::Array Notes;
    for (const DiagnosticMessage &Note : W.Notes) {
      json::Object N = location(Note, Lines);
      N["message"] = Note.Message;
      Notes.push_back(std::move(N));
    }
    Item["notes"] = std::move(Notes);
    Warnings.push_back(std::move(Item));
  }
  json::Array ErrorItems;
  for (const FileProblem &E : Report.Errors)
    ErrorItems.push_back(json::Object{{"file", E.File}, {"message", E.Message}});
  json::Object Document{{"version", 1},
                        {"findings", std::move(Items)},
                        {"errors", std::move(ErrorItems)}};
  if (!Warnings.empty())
    Document["compilerWarnings"] = std::move(Warnings);
  Document["suppressedInHeaders"] = Report.SuppressedInHeaders;
  OS << llvm::formatv("{0:2}", json::Value(std::move(Document))) << "\n";
}

/// A file:// URI (RFC 8089) for Path: every byte of the absolute path but the
/// unreserved characters of RFC 3986 and the '/' separators is
/// percent-encoded, so '#', '?', spaces, '%' and UTF-8 bytes survive a
/// consumer's URI parser.
std::string fileUri(llvm::StringRef Path) {
  llvm::SmallString<256> Absolute(Path);
  llvm::sys::fs::make_absolute(Absolute);
  llvm::sys::path::remove_dots(Absolute, /*remove_dot_dot=*/true);
  std::string Uri = "file://";
  for (unsigned char C : Absolute) {
    if (llvm::isAlnum(C) || C == '-' || C == '.' || C == '_' || C == '~' ||
        C == '/') {
      Uri += static_cast<char>(C);
      continue;
    }
    Uri += '%';
    Uri += llvm::hexdigit(C >> 4, /*LowerCase=*/false);
    Uri += llvm::hexdigit(C & 15, /*LowerCase=*/false);
  }
  return Uri;
}

static json::Object sarifLocation(const DiagnosticMessage &M, LineTable &Lines) {
  auto [Line, Column] = Lines.position(M.FilePath, M.FileOffset);
  return json::Object{
      {"physicalLocation",
       json::Object{{"artifactLocation", json::Object{{"uri", fileUri(M.FilePath)}}},
                    {"region", json::Object{{"startLine", Line},
                                            {"startColumn", Column}}}}}};
}

static json::Array sarifFixes(const DiagnosticMessage &M, llvm::StringRef Text,
                              LineTable &Lines) {
  json::Array Changes;
  for (const auto &[File, Replacements] : M.Fix) {
    json::Array Edits;
    for (const clang::tooling::Replacement &R : Replacements) {
      auto [StartLine, StartColumn] =
          Lines.position(R.getFilePath().str(), R.getOffset());
      auto [EndLine, EndColumn] =
          Lines.position(R.getFilePath().str(), R.getOffset() + R.getLength());
      Edits.push_back(json::Object{
          {"deletedRegion", json::Object{{"startLine", StartLine},
                                         {"startColumn", StartColumn},
                                         {"endLine", EndLine},
                                         {"endColumn", EndColumn},
                                         {"charOffset", R.getOffset()},
                                         {"charLength", R.getLength()}}},
          {"insertedContent", json::Object{{"text", R.getReplacementText().str()}}}});
    }
    Changes.push_back(json::Object{
        {"artifactLocation", json::Object{{"uri", fileUri(File)}}},
        {"replacements", std::move(Edits)}});
  }
  json::Array Fixes;
  if (!Changes.empty())
    Fixes.push_back(json::Object{{"description", json::Object{{"text", Text.str()}}},
                                 {"artifactChanges", std::move(Changes)}});
  return Fixes;
}

void writeSarif(llvm::raw_ostream &OS, const RunReport &Report,
                LineTable &Lines) {
  json::Array Results;
  for (const ClangTidyError &F : Report.Findings) {
    json::Array Related;
    // Describe what the warning's fix does: the broadcast fix changes
    // behaviour, and its note says how.
    const DiagnosticMessage *BroadcastNote = broadcastFixNote(F);
    json::Array Fixes = sarifFixes(
        F.Message,
        BroadcastNote ? BroadcastNote->Message
                      : std::string("fuse the forwards into one call"),
        Lines);
    int Id = 1;
    for (const DiagnosticMessage &Note : F.Notes) {
      json::Object Location = sarifLocation(Note, Lines);
      Location["id"] = Id++;
      Location["message"] = json::Object{{"text", Note.Message}};
      Related.push_back(std::move(Location));
      for (json::Value &Fix : sarifFixes(Note, Note.Message, Lines))
        Fixes.push_back(std::move(Fix));
    }
    json::Object Result{{"ruleId", F.DiagnosticName},
                        {"level", "warning"},
                        {"message", json::Object{{"text", F.Message.Message}}},
                        {"locations", json::Array{sarifLocation(F.Message, Lines)}},
                        {"relatedLocations", std::move(Related)}};
    if (!Fixes.empty())
      Result["fixes"] = std::move(Fixes);
    Results.push_back(std::move(Result));
  }
  // Compiler warnings are results of rules the log does not describe, named
  // by their warning option.
  for (const ClangTidyError &W : Report.CompilerWarnings) {
    json::Array Related;
    int Id = 1;
    for (const DiagnosticMessage &Note : W.Notes) {
      json::Object Location = sarifLocation(Note, Lines);
      Location["id"] = Id++;
      Location["message"] = json::Object{{"text", Note.Message}};
      Related.push_back(std::move(Location));
    }
    std::string Option = warningOption(W);
    Results.push_back(json::Object{
        {"ruleId", Option.empty() ? W.DiagnosticName : Option},
        {"level", "warning"},
        {"message", json::Object{{"text", W.Message.Message}}},
        {"locations", json::Array{sarifLocation(W.Message, Lines)}},
        {"relatedLocations", std::move(Related)}});
  }
  json::Array Notifications;
  for (const FileProblem &E : Report.Errors)
    Notifications.push_back(json::Object{
        {"level", "error"},
        {"message", json::Object{{"text", E.Message}}},
        {"locations",
         json::Array{json::Object{
             {"physicalLocation",
              json::Object{{"artifactLocation",
                            json::Object{{"uri", fileUri(E.File)}}}}}}}}});
  if (Report.SuppressedInHeaders)
    Notifications.push_back(json::Object{
        {"level", "note"},
        {"message",
         json::Object{{"text", std::to_string(Report.SuppressedInHeaders) +
                                   " warnings in headers suppressed by the "
                                   "header filter (use --header-filter)"}}}});
  json::Object Rule{
      {"id", CheckName},
      {"name", "MultipleForwardBeforeBackward"},
      {"shortDescription",
       json::Object{{"text", "Several forwards on a DDP-wrapped module before "
                             "one backward while buffers are broadcast"}}},
      {"fullDescription",
       json::Object{{"text", "DDP broadcasts buffers in place before every "
                             "forward; a second forward overwrites the "
                             "BatchNorm statistics the first forward saved "
                             "for backward, and autograd fails."}}},
      {"help",
       json::Object{
           {"text",
            "Call backward after each forward on the DDP-wrapped module, "
            "fuse the forwards into one call (forward_group), or construct "
            "DDP with broadcast_buffers(false) (each rank then keeps its own "
            "running statistics; synchronise them, e.g. SyncBatchNorm)."},
           {"markdown",
            "Call `backward()` after each forward on the DDP-wrapped module, "
            "fuse the forwards into one call (`forward_group`), or construct "
            "DDP with `broadcast_buffers(false)` (each rank then keeps its "
            "own running statistics; synchronise them, e.g. SyncBatchNorm)."}}},
      {"defaultConfiguration", json::Object{{"level", "warning"}}}};
  json::Object Run{
      {"tool",
       json::Object{{"driver", json::Object{{"name", "ddpguard"},
                                            {"version", DDPGUARD_VERSION},
                                            {"rules", json::Array{std::move(Rule)}}}}}},
      {"results", std::move(Results)},
      {"invocations",
       json::Array{json::Object{
           {"executionSuccessful", Report.Errors.empty()},
           {"toolExecutionNotifications", std::move(Notifications)}}}}};
  OS << llvm::formatv(
            "{0:2}",
            json::Value(json::Object{
                {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
                {"version", "2.1.0"},
                {"runs", json::Array{std::move(Run)}}}))
     << "\n";
}

} // namespace ddpguard
