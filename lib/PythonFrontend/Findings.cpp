//===- Findings.cpp - clobbers to findings --------------------------------===//
//
// Each clobber of a scope goes to every Python check's analysis
// (checks/<Title>.cpp, listed in PythonChecks.def); what they share is here.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"
#include "llvm/ADT/StringExtras.h"

namespace ddpguard {
namespace python {
namespace detail {

using namespace model;
using llvm::StringRef;

std::string saverName(StringRef Saver, const std::string &Uncalled) {
  if (!Saver.contains('\n') && Saver.size() <= 60)
    return Saver.str();
  if (!Saver.contains('('))
    return Uncalled;
  return (Saver.take_until([](char C) { return C == '('; }) + "(...)").str();
}

std::optional<SiteId> Lowering::firstOwnBackward(const AnalysisResult &R,
                                                 OriginId Saver,
                                                 OriginId Writer) const {
  std::optional<SiteId> B = R.firstBackward(Saver, Writer);
  if (B && ResultBackwards.count(*B))
    return std::nullopt;
  return B;
}

void Frontend::analyse(Scope &S, CheckResult &Result) {
  Lowering L(*this, S);
  L.run();
  if (L.ObjectNames.empty() && L.ValueWrites.empty() &&
      L.SilentWrites.empty())
    return;
  AnalysisOptions Analysis;
  Analysis.ListHazards = false;
  AnalysisResult R = analyzeHazards(L.Graph, Analysis);
  for (const Clobber &C : R.Clobbers) {
#define DDPGUARD_PYTHON_CHECK(Title) L.find##Title(R, C, Result);
#include "PythonChecks.def"
  }
}

} // namespace detail
} // namespace python
} // namespace ddpguard
