//===- Parsing.cpp - Python source to tree-sitter tree, within limits ------===//

#include "Parsing.h"
#include "Syntax.h"
#include "llvm/ADT/StringExtras.h"
#include <string>

namespace ddpguard {
namespace python {
namespace detail {

namespace {

/// A string prefix of PEP 750's template strings: t, rt, tr in any case.
bool isTemplatePrefix(StringRef Text) {
  std::string Lower = Text.lower();
  return Lower == "t" || Lower == "rt" || Lower == "tr";
}

/// Overwrites [Begin, End) of Text with spaces, keeping its line breaks.
void blank(std::string &Text, size_t Begin, size_t End) {
  for (size_t I = Begin; I < End; ++I)
    if (Text[I] != '\n' && Text[I] != '\r')
      Text[I] = ' ';
}

/// Blanks each `= default` of a type parameter list (PEP 696), up to the
/// next comma or closing bracket outside brackets and strings.
bool blankTypeParameterDefaults(std::string &Text, size_t Begin, size_t End) {
  bool Changed = false;
  int Depth = 0;
  char Quote = 0;
  std::optional<size_t> Default;
  for (size_t I = Begin; I < End; ++I) {
    char C = Text[I];
    if (Quote) {
      if (C == '\\')
        ++I;
      else if (C == Quote)
        Quote = 0;
      continue;
    }
    if (C == '"' || C == '\'') {
      Quote = C;
    } else if (C == '(' || C == '[' || C == '{') {
      ++Depth;
    } else if (C == ')' || C == ']' || C == '}') {
      // Depth 1 is the list's own brackets.
      if (--Depth == 0 && Default) {
        blank(Text, *Default, I);
        Default.reset();
        Changed = true;
      }
    } else if (C == ',' && Depth == 1 && Default) {
      blank(Text, *Default, I);
      Default.reset();
      Changed = true;
    } else if (C == '=' && Depth == 1) {
      Default = I;
    }
  }
  return Changed;
}

/// The end of the string literal that starts at I (at its quote), or of the
/// text.
size_t stringEnd(StringRef Text, size_t I) {
  char Quote = Text[I];
  bool Triple = Text.substr(I, 3) == std::string(3, Quote);
  for (size_t J = I + (Triple ? 3 : 1); J < Text.size(); ++J) {
    if (Text[J] == '\\')
      ++J;
    else if (Text[J] == Quote &&
             (!Triple || Text.substr(J, 3) == std::string(3, Quote)))
      return J + (Triple ? 3 : 1);
  }
  return Text.size();
}

/// Blanks, in [Begin, End), each star that unpacks a bracketed expression
/// into an unparenthesised tuple: `x = *[1], e`, `return *[None] * 3, *g`,
/// `return a, *(b)`. The grammar reads such a star as a product; without it
/// the parse is the same tuple, less the unpacking, which no check reads.
bool blankStarsBeforeBrackets(std::string &Text, size_t Begin, size_t End) {
  bool Changed = false;
  StringRef All(Text);
  for (size_t I = Begin; I < End; ++I) {
    char C = Text[I];
    if (C == '#') {
      I = std::min(All.find('\n', I), End);
    } else if (C == '"' || C == '\'') {
      I = stringEnd(All, I) - 1;
    } else if (C == '*' && (I == 0 || Text[I - 1] != '*') && Text[I + 1] != '*') {
      StringRef Before = All.take_front(I).rtrim();
      StringRef After = All.drop_front(I + 1).ltrim(" \t");
      bool StartsAnItem = Before.ends_with(",") ||
                          (Before.ends_with("=") && !Before.ends_with("==")) ||
                          Before.ends_with("return") ||
                          Before.ends_with("yield") || Before.ends_with(" in");
      if (StartsAnItem && !After.empty() && StringRef("([{").contains(After[0])) {
        Text[I] = ' ';
        Changed = true;
      }
    }
  }
  return Changed;
}

/// Rewrites, in the text the parser reads, the spellings of newer Pythons
/// the grammar fails on, where the tree shows such a failure. Returns
/// whether it changed anything.
bool repair(TSNode Root, std::string &Text) {
  bool Changed = false;
  walkIteratively(Root, [&](TSNode N, unsigned) {
    if (!ts_node_has_error(N))
      return Walk::Skip;
    StringRef Kind = type(N);
    if (ts_node_is_error(N)) {
      // t"..." reads as the name t before a string: f"..." has the same
      // syntax inside (PEP 750).
      walkIteratively(N, [&](TSNode Inner, unsigned) {
        uint32_t Begin = ts_node_start_byte(Inner),
                 End = ts_node_end_byte(Inner);
        if (type(Inner) == "identifier" && End < Text.size() &&
            (Text[End] == '"' || Text[End] == '\'') &&
            isTemplatePrefix(StringRef(Text).slice(Begin, End))) {
          for (uint32_t I = Begin; I < End; ++I)
            if (Text[I] == 't' || Text[I] == 'T')
              Text[I] = Text[I] == 't' ? 'f' : 'F';
          Changed = true;
        }
        return Walk::Enter;
      });
      TSNode Around = ts_node_parent(N);
      TSNode Scanned = type(Around) == "list_splat" ? Around : N;
      Changed |= blankStarsBeforeBrackets(Text, ts_node_start_byte(Scanned),
                                          ts_node_end_byte(Scanned));
    } else if (Kind == "type_parameter") {
      Changed |= blankTypeParameterDefaults(Text, ts_node_start_byte(N),
                                            ts_node_end_byte(N));
    }
    return Walk::Enter;
  });
  return Changed;
}

std::optional<Position> firstTooDeep(TSNode Root) {
  std::optional<Position> Found;
  walkIteratively(Root, [&](TSNode N, unsigned Depth) {
    if (Depth <= MaxNestingDepth)
      return Walk::Enter;
    Found = positionOf(N);
    return Walk::Stop;
  });
  return Found;
}

} // namespace

ParsedFile parsePython(TSParser *Parser, StringRef Source) {
  auto Parse = [&](StringRef Text) {
    return TreePtr(
        ts_parser_parse_string(Parser, nullptr, Text.data(), Text.size()),
        ts_tree_delete);
  };
  // Python reads a lone carriage return as a line break; the grammar does
  // not.
  std::string Text;
  for (size_t I = Source.find('\r'); I != StringRef::npos;
       I = Source.find('\r', I + 1))
    if (I + 1 == Source.size() || Source[I + 1] != '\n') {
      if (Text.empty())
        Text = Source.str();
      Text[I] = '\n';
    }
  ParsedFile Result;
  Result.Tree = Parse(Text.empty() ? Source : StringRef(Text));
  // Each repair removes the errors of one spelling; a few rounds cover
  // spellings nested in one another.
  for (unsigned Round = 0;
       Round < 3 && ts_node_has_error(ts_tree_root_node(Result.Tree.get()));
       ++Round) {
    if (Text.empty())
      Text = Source.str();
    if (!repair(ts_tree_root_node(Result.Tree.get()), Text))
      break;
    Result.Tree = Parse(Text);
  }
  Result.TooDeep = firstTooDeep(ts_tree_root_node(Result.Tree.get()));
  return Result;
}

} // namespace detail
} // namespace python
} // namespace ddpguard
