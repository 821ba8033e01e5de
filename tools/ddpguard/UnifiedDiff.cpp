//===- UnifiedDiff.cpp ----------------------------------------------------===//

#include "UnifiedDiff.h"
#include "llvm/ADT/SmallVector.h"
#include <algorithm>
#include <vector>

namespace ddpguard {

/// The lines of Text, each with its line break (the last may have none).
static std::vector<llvm::StringRef> linesOf(llvm::StringRef Text) {
  std::vector<llvm::StringRef> Lines;
  while (!Text.empty()) {
    size_t End = Text.find('\n');
    End = End == llvm::StringRef::npos ? Text.size() : End + 1;
    Lines.push_back(Text.take_front(End));
    Text = Text.drop_front(End);
  }
  return Lines;
}

namespace {
/// One line of the edit script: kept, removed from Before or added in After.
struct DiffLine {
  char Tag;
  llvm::StringRef Text;
};
} // namespace

/// The edit script between A and B: the longest common subsequence of the
/// lines between their common head and tail. Fixes change few lines, so the
/// table is small; past MaxCells the middle is replaced as one block, still
/// a correct diff.
static std::vector<DiffLine> editScript(const std::vector<llvm::StringRef> &A,
                                        const std::vector<llvm::StringRef> &B) {
  size_t Head = 0;
  while (Head < A.size() && Head < B.size() && A[Head] == B[Head])
    ++Head;
  size_t Tail = 0;
  while (Tail < A.size() - Head && Tail < B.size() - Head &&
         A[A.size() - 1 - Tail] == B[B.size() - 1 - Tail])
    ++Tail;
  size_t N = A.size() - Head - Tail, M = B.size() - Head - Tail;
  std::vector<DiffLine> Script;
  for (size_t I = 0; I < Head; ++I)
    Script.push_back({' ', A[I]});
  constexpr size_t MaxCells = 4'000'000;
  if ((N + 1) * (M + 1) > MaxCells) {
    for (size_t I = 0; I < N; ++I)
      Script.push_back({'-', A[Head + I]});
    for (size_t J = 0; J < M; ++J)
      Script.push_back({'+', B[Head + J]});
  } else {
    // Common[I][J]: the LCS length of A's middle from I and B's from J.
    std::vector<std::vector<unsigned>> Common(N + 1,
                                              std::vector<unsigned>(M + 1));
    for (size_t I = N; I-- > 0;)
      for (size_t J = M; J-- > 0;)
        Common[I][J] = A[Head + I] == B[Head + J]
                           ? Common[I + 1][J + 1] + 1
                           : std::max(Common[I + 1][J], Common[I][J + 1]);
    size_t I = 0, J = 0;
    while (I < N || J < M) {
      if (I < N && J < M && A[Head + I] == B[Head + J]) {
        Script.push_back({' ', A[Head + I]});
        ++I, ++J;
      } else if (I < N && (J == M || Common[I + 1][J] >= Common[I][J + 1])) {
        // Removed lines first, as diff -u prints them.
        Script.push_back({'-', A[Head + I]});
        ++I;
      } else {
        Script.push_back({'+', B[Head + J]});
        ++J;
      }
    }
  }
  for (size_t I = A.size() - Tail; I < A.size(); ++I)
    Script.push_back({' ', A[I]});
  return Script;
}

static std::string range(size_t Start, size_t Count) {
  // A hunk of no lines names the line before it (diff -u's convention).
  return std::to_string(Count == 0 ? Start - 1 : Start) +
         (Count == 1 ? "" : "," + std::to_string(Count));
}

std::string unifiedDiff(llvm::StringRef Path, llvm::StringRef Before,
                        llvm::StringRef After) {
  if (Before == After)
    return "";
  constexpr size_t Context = 3;
  std::vector<DiffLine> Script = editScript(linesOf(Before), linesOf(After));
  std::string Out = "--- " + Path.str() + "\n+++ " + Path.str() + "\n";
  size_t K = 0;
  while (K < Script.size()) {
    size_t Change = K;
    while (Change < Script.size() && Script[Change].Tag == ' ')
      ++Change;
    if (Change == Script.size())
      break;
    // The hunk: Context lines before the first change, through the last
    // change whose gap to the next is at most 2 * Context, and Context after.
    size_t Start = Change >= K + Context ? Change - Context : K;
    size_t End = Change;
    for (size_t Gap = 0, I = Change; I < Script.size(); ++I) {
      if (Script[I].Tag != ' ') {
        End = I + 1;
        Gap = 0;
      } else if (++Gap > 2 * Context) {
        break;
      }
    }
    End = std::min(Script.size(), End + Context);
    size_t OldStart = 1, NewStart = 1;
    for (size_t I = 0; I < Start; ++I) {
      OldStart += Script[I].Tag != '+';
      NewStart += Script[I].Tag != '-';
    }
    size_t OldCount = 0, NewCount = 0;
    std::string Body;
    for (size_t I = Start; I < End; ++I) {
      OldCount += Script[I].Tag != '+';
      NewCount += Script[I].Tag != '-';
      Body += Script[I].Tag;
      Body += Script[I].Text.str();
      if (!Script[I].Text.ends_with("\n"))
        Body += "\n\\ No newline at end of file\n";
    }
    Out += "@@ -" + range(OldStart, OldCount) + " +" +
           range(NewStart, NewCount) + " @@\n" + Body;
    K = End;
  }
  return Out;
}

} // namespace ddpguard
