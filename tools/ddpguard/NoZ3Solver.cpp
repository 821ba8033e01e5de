//===- NoZ3Solver.cpp - LLVMSupport's Z3 solver, left out -----------------===//
//
// The statically linked CLI (DDPGUARD_STATIC_CLI) would otherwise take
// Z3Solver.cpp.o from libLLVMSupport.a, which needs libz3.so at run time:
// Clang's static analyzer refers to it (crosscheck-with-z3), though no check
// ddpguard runs uses the analyzer. These are the definitions that object
// provides, as LLVM built without Z3 has them.
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/SMTAPI.h"
#include "llvm/Support/raw_ostream.h"

llvm::SMTSolverRef llvm::CreateZ3Solver() {
  llvm::report_fatal_error("ddpguard is linked without Z3: the static analyzer's "
                           "crosscheck-with-z3 is not available");
}

void llvm::SMTSort::dump() const { print(llvm::errs()); }
void llvm::SMTExpr::dump() const { print(llvm::errs()); }
void llvm::SMTSolver::dump() const { print(llvm::errs()); }
void llvm::SMTSolverStatistics::dump() const { print(llvm::errs()); }
