//===- Report.cpp ---------------------------------------------------------===//

#include "Report.h"
#include "Tidy/CheckNames.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <algorithm>

using clang::tidy::ClangTidyError;
using clang::tooling::DiagnosticMessage;
namespace json = llvm::json;

namespace ddpguard {


llvm::StringRef noteKindName(NoteKind Kind) {
  switch (Kind) {
  case NoteKind::Place:
    return "place";
  case NoteKind::JudgedBy:
    return "judged-by";
  case NoteKind::EveryTorch:
    return "every-torch";
  case NoteKind::Assumption:
    return "assumption";
  case NoteKind::FixEffect:
    return "fix-effect";
  case NoteKind::NoFix:
    return "no-fix";
  case NoteKind::Alternative:
    return "alternative";
  }
  llvm_unreachable("every note kind is named");
}

llvm::StringRef applicabilityName(FixApplicability Applicability) {
  switch (Applicability) {
  case FixApplicability::None:
    return "";
  case FixApplicability::Safe:
    return "safe";
  case FixApplicability::Unsafe:
    return "unsafe";
  }
  llvm_unreachable("every applicability is named");
}

void Finding::insertNote(size_t At, DiagnosticMessage Note, NoteKind Kind,
                         NoteRole Role) {
  NoteKinds.resize(Notes.size(), NoteKind::Place);
  NoteRoles.resize(Notes.size(), NoteRole::None);
  Notes.insert(Notes.begin() + At, std::move(Note));
  NoteKinds.insert(NoteKinds.begin() + At, Kind);
  NoteRoles.insert(NoteRoles.begin() + At, Role);
}

void Finding::addNote(DiagnosticMessage Note, NoteKind Kind, NoteRole Role) {
  insertNote(Notes.size(), std::move(Note), Kind, Role);
}

void Finding::eraseNote(size_t At) {
  NoteKinds.resize(Notes.size(), NoteKind::Place);
  NoteRoles.resize(Notes.size(), NoteRole::None);
  Notes.erase(Notes.begin() + At);
  NoteKinds.erase(NoteKinds.begin() + At);
  NoteRoles.erase(NoteRoles.begin() + At);
}

void Finding::apply(const FindingRecord &Record,
                    llvm::function_ref<std::string(llvm::StringRef)> Path) {
  NoteKinds.assign(Notes.size(), NoteKind::Place);
  NoteRoles.assign(Notes.size(), NoteRole::None);
  // The renderer adds notes of its own (a macro's expansion) between the
  // check's: a recorded note belongs to the next note at its place.
  size_t Next = 0;
  for (size_t I = 0; I < Notes.size() && Next < Record.Notes.size(); ++I) {
    const NoteRecord &Recorded = Record.Notes[Next];
    if (Notes[I].FileOffset != Recorded.At.Offset ||
        Path(Notes[I].FilePath) != Path(Recorded.At.File))
      continue;
    NoteKinds[I] = Recorded.Kind;
    NoteRoles[I] = Recorded.Role;
    ++Next;
  }
  if (!Message.Fix.empty()) {
    Applicability = Record.Applicability;
    FixTitle = Record.FixTitle;
  }
}

void writeCheckList(llvm::raw_ostream &OS, bool Json) {
  if (!Json) {
    for (const checks::CheckInfo &Check : checks::Table) {
      std::string Fix = checks::fixAvailabilityName(Check.Fix).str();
      if (Check.FixSafety != FixApplicability::None)
        Fix += ", " + applicabilityName(Check.FixSafety).str();
      OS << Check.Name << " (fix: " << Fix << ")\n  " << Check.Summary
         << "\n  " << Check.Doc << "\n";
    }
    return;
  }
  json::Array Checks;
  for (const checks::CheckInfo &Check : checks::Table) {
    json::Object Row{
        {"name", Check.Name},
        {"summary", Check.Summary},
        {"explanation", Check.Explanation},
        {"fixAvailability", checks::fixAvailabilityName(Check.Fix)},
        {"doc", Check.Doc}};
    if (Check.FixSafety != FixApplicability::None)
      Row["fixApplicability"] = applicabilityName(Check.FixSafety);
    Checks.push_back(std::move(Row));
  }
  OS << llvm::formatv("{0:2}", json::Value(std::move(Checks))) << "\n";
}

const DiagnosticMessage *fixEffectNote(const Finding &F) {
  if (F.Message.Fix.empty())
    return nullptr;
  for (size_t I = 0; I < F.Notes.size(); ++I)
    if (F.kindOf(I) == NoteKind::FixEffect)
      return &F.Notes[I];
  return nullptr;
}

void LineTable::FileLines::assign(std::string Contents) {
  Text = std::move(Contents);
  Starts = {0};
  // Lines end in \n, \r\n or a lone \r, as Python and clang read them.
  for (size_t I = 0; I < Text.size(); ++I)
    if (Text[I] == '\n' ||
        (Text[I] == '\r' && (I + 1 == Text.size() || Text[I + 1] != '\n')))
      Starts.push_back(I + 1);
}

LineTable::FileLines &LineTable::load(const std::string &File) {
  auto [It, Inserted] = Files.try_emplace(File);
  if (Inserted) {
    auto Buffer = llvm::MemoryBuffer::getFile(File);
    It->second.assign(Buffer ? (*Buffer)->getBuffer().str() : "");
  }
  return It->second;
}

void LineTable::provide(const std::string &File, llvm::StringRef Text) {
  Files[File].assign(Text.str());
}

std::pair<unsigned, unsigned> LineTable::position(const std::string &File,
                                                  unsigned Offset) {
  const std::vector<unsigned> &Starts = load(File).Starts;
  auto Line = std::upper_bound(Starts.begin(), Starts.end(), Offset) - 1;
  return {static_cast<unsigned>(Line - Starts.begin()) + 1,
          Offset - *Line + 1};
}

llvm::StringRef LineTable::text(const std::string &File) {
  return load(File).Text;
}

llvm::StringRef LineTable::lineText(const std::string &File, unsigned Line) {
  FileLines &F = load(File);
  if (Line == 0 || Line > F.Starts.size())
    return "";
  llvm::StringRef Text = llvm::StringRef(F.Text).drop_front(F.Starts[Line - 1]);
  return Text.take_until([](char C) { return C == '\n' || C == '\r'; });
}

static void writeMessage(llvm::raw_ostream &OS, const DiagnosticMessage &M,
                         llvm::StringRef Level, llvm::StringRef Suffix,
                         LineTable &Lines) {
  auto [Line, Column] = Lines.position(M.FilePath, M.FileOffset);
  OS << workingPath(M.FilePath) << ":" << Line << ":" << Column << ": " << Level << ": "
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
  for (const Finding &F : Report.Findings) {
    json::Object Item = location(F.Message, Lines);
    Item["check"] = F.DiagnosticName;
    Item["message"] = F.Message.Message;
    json::Array Notes;
    for (size_t I = 0; I < F.Notes.size(); ++I) {
      const DiagnosticMessage &Note = F.Notes[I];
      json::Object N = location(Note, Lines);
      N["message"] = Note.Message;
      N["kind"] = noteKindName(F.kindOf(I));
      N["fix"] = replacements(Note);
      Notes.push_back(std::move(N));
    }
    Item["notes"] = std::move(Notes);
    Item["fix"] = replacements(F.Message);
    if (!F.FixTitle.empty())
      Item["fixTitle"] = F.FixTitle;
    if (F.Applicability != FixApplicability::None)
      Item["fixApplicability"] = applicabilityName(F.Applicability);
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
  for (const FileProblem &E : Report.Errors) {
    json::Object Item{{"file", E.File}, {"message", E.Message}};
    if (E.Offset) {
      auto [Line, Column] = Lines.position(E.File, *E.Offset);
      Item["offset"] = *E.Offset;
      Item["line"] = Line;
      Item["column"] = Column;
    }
    ErrorItems.push_back(std::move(Item));
  }
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

std::string workingPath(llvm::StringRef Path) {
  llvm::SmallString<256> Absolute(Path), Cwd;
  llvm::sys::fs::make_absolute(Absolute);
  llvm::sys::path::remove_dots(Absolute, /*remove_dot_dot=*/true);
  if (llvm::sys::fs::current_path(Cwd))
    return std::string(Absolute);
  llvm::sys::path::remove_dots(Cwd, /*remove_dot_dot=*/true);
  llvm::StringRef Rest(Absolute);
  if (!Rest.consume_front(Cwd) || Rest.empty() ||
      !llvm::sys::path::is_separator(Rest.front()))
    return std::string(Absolute);
  return Rest.drop_front().str();
}

/// A raw lexer over Text from Offset: C++ tokens without a preprocessor.
static std::unique_ptr<clang::Lexer>
rawLexer(llvm::StringRef Text, unsigned Offset,
         const clang::LangOptions &Options) {
  auto L = std::make_unique<clang::Lexer>(
      clang::SourceLocation(), Options, Text.begin(),
      Text.begin() + std::min<size_t>(Offset, Text.size()), Text.end());
  L->SetCommentRetentionState(false);
  return L;
}

static clang::LangOptions cxxOptions() {
  clang::LangOptions Options;
  Options.CPlusPlus = Options.CPlusPlus11 = Options.CPlusPlus14 =
      Options.CPlusPlus17 = true;
  return Options;
}

static bool isIdentifier(llvm::StringRef Token) {
  return !Token.empty() && (llvm::isAlpha(Token[0]) || Token[0] == '_');
}

/// The function a '{' after Tokens opens: the name before the parameter
/// list that closes right before it (specifiers, a trailing return type or
/// a constructor's initialisers between them), or "" for a statement, a
/// lambda, a class, a namespace or an initialiser.
static std::string braceOwner(const std::vector<llvm::StringRef> &Tokens) {
  static const llvm::StringSet<> NotFunctions = {
      "if", "for", "while", "switch", "catch", "return", "sizeof", "decltype",
      "alignof", "noexcept", "throw", "requires", "static_assert", "constexpr"};
  size_t I = Tokens.size();
  // Back over specifiers and a trailing return type to the ')' closing the
  // parameter list; ';', '{', '}', '=' mean no function.
  while (I > 0 && Tokens[I - 1] != ")") {
    llvm::StringRef T = Tokens[I - 1];
    if (T == ";" || T == "{" || T == "}" || T == "=" || T == "]")
      return "";
    --I;
  }
  while (I > 0) {
    // Tokens[I - 1] is ')': find its '('.
    size_t Depth = 0, J = I;
    while (J > 0) {
      llvm::StringRef T = Tokens[--J];
      if (T == ")")
        ++Depth;
      else if (T == "(" && --Depth == 0)
        break;
    }
    if (Depth != 0 || J == 0)
      return "";
    llvm::StringRef Name = Tokens[J - 1];
    // noexcept(...), throw(...), a constructor's member(init) or a lambda
    // [...](...) : go on back.
    if (Name == "noexcept" || Name == "throw") {
      I = J - 1;
      while (I > 0 && Tokens[I - 1] != ")" && isIdentifier(Tokens[I - 1]))
        --I;
      if (I == 0 || Tokens[I - 1] != ")")
        return "";
      continue;
    }
    if (!isIdentifier(Name) || NotFunctions.count(Name))
      return "";
    size_t K = J - 1;
    if (K > 0 && (Tokens[K - 1] == "," || Tokens[K - 1] == ":")) {
      // A constructor's initialiser list: back to the ')' before the ':'.
      size_t Depth2 = 0;
      while (K > 0) {
        llvm::StringRef T = Tokens[--K];
        if (T == ")" || T == "}")
          ++Depth2;
        else if (T == "(" || T == "{")
          --Depth2;
        else if (Depth2 == 0 && T == ":" && K > 0 && Tokens[K - 1] == ")")
          break;
        else if (Depth2 == 0 && (T == ";" || T == "{" || T == "}"))
          return "";
      }
      if (K == 0)
        return "";
      I = K;
      continue;
    }
    std::string Qualified = Name.str();
    if (K > 0 && Tokens[K - 1] == "~")
      Qualified = "~" + Qualified, --K;
    while (K > 1 && Tokens[K - 1] == "::" && isIdentifier(Tokens[K - 2])) {
      Qualified = (Tokens[K - 2] + "::" + Qualified).str();
      K -= 2;
    }
    return Qualified;
  }
  return "";
}

std::string enclosingFunction(llvm::StringRef Text, unsigned Offset) {
  clang::LangOptions Options = cxxOptions();
  std::unique_ptr<clang::Lexer> Lexer = rawLexer(Text, 0, Options);
  clang::Lexer &L = *Lexer;
  std::vector<llvm::StringRef> Tokens;
  std::vector<std::string> Open;
  clang::Token Tok;
  while (true) {
    L.LexFromRawLexer(Tok);
    if (Tok.is(clang::tok::eof))
      break;
    const char *Start = L.getBufferLocation() - Tok.getLength();
    if (static_cast<size_t>(Start - Text.begin()) >= Offset)
      break;
    llvm::StringRef Spelling(Start, Tok.getLength());
    if (Tok.is(clang::tok::l_brace))
      Open.push_back(braceOwner(Tokens));
    else if (Tok.is(clang::tok::r_brace) && !Open.empty())
      Open.pop_back();
    Tokens.push_back(Spelling);
  }
  for (auto It = Open.rbegin(); It != Open.rend(); ++It)
    if (!It->empty())
      return *It;
  return "";
}

/// The length of the token at Offset (1 past the end of the text).
static unsigned tokenLength(llvm::StringRef Text, unsigned Offset) {
  if (Offset >= Text.size())
    return 0;
  clang::LangOptions Options = cxxOptions();
  std::unique_ptr<clang::Lexer> Lexer = rawLexer(Text, Offset, Options);
  clang::Lexer &L = *Lexer;
  clang::Token Tok;
  L.LexFromRawLexer(Tok);
  if (Tok.is(clang::tok::eof) ||
      L.getBufferLocation() - Tok.getLength() != Text.begin() + Offset)
    return 0;
  return Tok.getLength();
}

static std::string normalizedLine(llvm::StringRef Line) {
  llvm::SmallVector<llvm::StringRef> Words;
  llvm::SplitString(Line, Words);
  return llvm::join(Words, " ");
}

std::string findingFingerprint(const Finding &F, LineTable &Lines) {
  const std::string &File = F.Message.FilePath;
  std::vector<std::string> Forwards{normalizedLine(
      Lines.lineText(File, Lines.position(File, F.Message.FileOffset).first))};
  for (size_t I = 0; I < F.Notes.size(); ++I) {
    const DiagnosticMessage &Note = F.Notes[I];
    if (F.roleOf(I) == NoteRole::EarlierForward)
      Forwards.push_back(normalizedLine(Lines.lineText(
          Note.FilePath, Lines.position(Note.FilePath, Note.FileOffset).first)));
  }
  llvm::SHA256 Hash;
  auto Add = [&](llvm::StringRef Part) {
    Hash.update(Part);
    Hash.update(llvm::StringRef("\0", 1));
  };
  Add(F.DiagnosticName);
  Add(workingPath(File));
  Add(enclosingFunction(Lines.text(File), F.Message.FileOffset));
  for (const std::string &Line : Forwards)
    Add(Line);
  std::array<uint8_t, 32> Digest = Hash.final();
  return llvm::toHex(llvm::ArrayRef<uint8_t>(Digest), /*LowerCase=*/true)
      .substr(0, 32);
}

void writeSarif(llvm::raw_ostream &OS, const RunReport &Report,
                LineTable &Lines, const SarifOptions &Options) {
  json::Array Results;
  // Identical fingerprints (the same forwards twice in one function) are
  // told apart by their order, as code scanning's own line hashes are.
  std::map<std::string, unsigned> FingerprintCount;
  for (const Finding &F : Report.Findings) {
    json::Array Related;
    // Describe what the warning's fix does: its note says how, else its
    // title.
    const DiagnosticMessage *EffectNote = fixEffectNote(F);
    json::Array Fixes = sarifFixes(
        F.Message, EffectNote ? EffectNote->Message : F.FixTitle, Lines);
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
    std::string Fingerprint = findingFingerprint(F, Lines);
    Fingerprint += ":" + std::to_string(++FingerprintCount[Fingerprint]);
    Result["partialFingerprints"] =
        json::Object{{"ddpguardHash/v1", std::move(Fingerprint)}};
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
  json::Array Rules;
  for (const checks::CheckInfo &Check : checks::Table) {
    std::string HelpText = Check.Help.str();
    llvm::erase(HelpText, '`');
    json::Object Rule{
        {"id", Check.Name},
        {"name", Check.Title},
        {"shortDescription", json::Object{{"text", Check.Summary}}},
        {"fullDescription", json::Object{{"text", Check.Explanation}}},
        {"help", json::Object{{"text", std::move(HelpText)},
                              {"markdown", Check.Help}}},
        {"defaultConfiguration", json::Object{{"level", "warning"}}},
        {"properties", json::Object{{"fixAvailability",
                                     checks::fixAvailabilityName(Check.Fix)}}}};
    if (Check.FixSafety != FixApplicability::None)
      (*Rule.getObject("properties"))["fixApplicability"] =
          applicabilityName(Check.FixSafety);
    if (!Options.HelpUriBase.empty())
      Rule["helpUri"] = (Options.HelpUriBase + Check.Name).str();
    Rules.push_back(std::move(Rule));
  }
  json::Object Run{
      {"tool",
       json::Object{{"driver", json::Object{{"name", "ddpguard"},
                                            {"version", DDPGUARD_VERSION},
                                            {"rules", std::move(Rules)}}}}},
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

void writeSarif(llvm::raw_ostream &OS, const RunReport &Report,
                LineTable &Lines) {
  writeSarif(OS, Report, Lines, SarifOptions());
}

static json::Object rdPosition(unsigned Line, unsigned Column) {
  return json::Object{{"line", Line}, {"column", Column}};
}

/// An rdjsonl location: the token at M's place (its end exclusive).
static json::Object rdLocation(const DiagnosticMessage &M, LineTable &Lines) {
  auto [Line, Column] = Lines.position(M.FilePath, M.FileOffset);
  unsigned Length = tokenLength(Lines.text(M.FilePath), M.FileOffset);
  return json::Object{
      {"path", workingPath(M.FilePath)},
      {"range", json::Object{{"start", rdPosition(Line, Column)},
                             {"end", rdPosition(Line, Column + Length)}}}};
}

void writeRdjsonl(llvm::raw_ostream &OS, const RunReport &Report,
                  LineTable &Lines) {
  auto Write = [&](const ClangTidyError &E, const std::string &Code,
                   bool Suggest) {
    json::Array Related;
    for (const DiagnosticMessage &Note : E.Notes)
      if (!Note.FilePath.empty())
        Related.push_back(json::Object{{"message", Note.Message},
                                       {"location", rdLocation(Note, Lines)}});
    // The warning's own fix (what --fix applies), where it edits the
    // warning's file: reviewdog suggests changes to that file only.
    json::Array Suggestions;
    if (Suggest)
      for (const auto &[File, Replacements] : E.Message.Fix)
        for (const clang::tooling::Replacement &R : Replacements) {
          std::string Path = R.getFilePath().str();
          if (Path != E.Message.FilePath)
            continue;
          auto [StartLine, StartColumn] = Lines.position(Path, R.getOffset());
          auto [EndLine, EndColumn] =
              Lines.position(Path, R.getOffset() + R.getLength());
          Suggestions.push_back(json::Object{
              {"range",
               json::Object{{"start", rdPosition(StartLine, StartColumn)},
                            {"end", rdPosition(EndLine, EndColumn)}}},
              {"text", R.getReplacementText().str()}});
        }
    json::Object Line{{"message", E.Message.Message},
                      {"location", rdLocation(E.Message, Lines)},
                      {"severity", "WARNING"},
                      {"source", json::Object{{"name", "ddpguard"}}},
                      {"code", json::Object{{"value", Code}}}};
    if (!Suggestions.empty())
      Line["suggestions"] = std::move(Suggestions);
    if (!Related.empty())
      Line["related_locations"] = std::move(Related);
    OS << json::Value(std::move(Line)) << "\n";
  };
  for (const ClangTidyError &F : Report.Findings)
    Write(F, F.DiagnosticName, /*Suggest=*/true);
  for (const ClangTidyError &W : Report.CompilerWarnings) {
    std::string Option = warningOption(W);
    Write(W, Option.empty() ? W.DiagnosticName : Option, /*Suggest=*/false);
  }
}

} // namespace ddpguard
