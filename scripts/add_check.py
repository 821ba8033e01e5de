#!/usr/bin/env python3
"""Scaffolds a new ddpguard check, as ruff's scripts/add_rule.py does.

    scripts/add_check.py silent-write-before-backward \\
        --summary "A write autograd does not see, before a backward"

adds the check's name and its row to the table (lib/Tidy/CheckNames.h),
registers it in the tidy module, in lib/PythonFrontend/PythonChecks.def (the
Python checks' list) and in lib/CMakeLists.txt and
tools/ddpguard/CMakeLists.txt, and writes the check's files: the C++ check's
header and source (lib/Tidy/<Title>Check.{h,cpp}), its Python analysis
(lib/PythonFrontend/checks/<Title>.cpp: a clobber to the check's finding) and
its Python rendering (tools/ddpguard/python-checks/<Title>.cpp: the finding
to the CLI's message, notes and fix), all of which compile and report
nothing until written; one lit test in the check's folder
(test/lit/checks/<name>/) and its doc page (lib/Tidy/<Title>Check.md, with
the sections of every check's page, naming these files). Fill in the row's
explanation, help, fix and triggers, then the checks: the Python finding's
struct (<Title>Finding, a stub before CheckResult in
lib/PythonFrontend/PythonFrontend.h, whose vector CheckResult::<Title> the
scaffold adds), the analysis that fills it and orders it, and its
rendering. --dry-run names the files without writing them; --root writes
into another tree.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def insert_before(text: str, anchor: str, addition: str, path: Path) -> str:
    at = text.find(anchor)
    if at < 0:
        sys.exit(f"add_check.py: {path}: no '{anchor.strip()}' to insert before")
    return text[:at] + addition + text[at:]


def table_edit(text: str, name: str, title: str, summary: str, path: Path) -> str:
    constant = (f"/// {summary}.\n"
                f"inline constexpr llvm::StringLiteral {title} =\n"
                f"    {c_string(name)};\n\n")
    text = insert_before(text, "/// Whether a finding of the check can carry a fix",
                         constant, path)
    row = (f"    {{{title}, {c_string(title)},\n"
           f"     {c_string(summary)},\n"
           f"     \"What goes wrong, in a few sentences.\",\n"
           f"     \"What to do, in Markdown.\",\n"
           f"     FixAvailability::Never, FixApplicability::None,\n"
           f"     \"lib/Tidy/{title}Check.md\", BackwardCall}},\n")
    end = re.search(r"\n};\n\n/// The checks' names", text)
    if not end:
        sys.exit(f"add_check.py: {path}: no end of the table")
    return text[:end.start() + 1] + row + text[end.start() + 1:]


def module_edit(text: str, name: str, title: str, path: Path) -> str:
    text = insert_before(text, '#include "clang-tidy/ClangTidyModule.h"',
                         f'#include "{title}Check.h"\n', path)
    return insert_before(text, "  }\n};\n",
                         f"    CheckFactories.registerCheck<{title}Check>(\n"
                         f"        checks::{title});\n", path)


def cmake_edit(text: str, title: str, path: Path) -> str:
    text = insert_before(text, "  Tidy/DDPGuardTidyModule.cpp)",
                         f"  Tidy/{title}Check.cpp\n", path)
    return insert_before(text, "  PythonFrontend/Findings.cpp)",
                         f"  PythonFrontend/checks/{title}.cpp\n", path)


def tools_cmake_edit(text: str, title: str, path: Path) -> str:
    return insert_before(text, "  $<TARGET_OBJECTS:ddpguardChecker>)",
                         f"  python-checks/{title}.cpp\n", path)


def python_checks_edit(text: str, title: str, path: Path) -> str:
    return insert_before(text, "\n#undef DDPGUARD_PYTHON_CHECK",
                         f"DDPGUARD_PYTHON_CHECK({title})\n", path)


def python_finding_edit(text: str, name: str, title: str, summary: str,
                        path: Path) -> str:
    finding = (f"/// {summary} ({name}).\n"
               f"struct {title}Finding {{\n"
               f"  /// Where it is reported.\n"
               f"  Position At;\n"
               f"}};\n\n")
    text = insert_before(text, "struct CheckResult {", finding, path)
    return insert_before(text, "  /// Where the parser met text it could not read.",
                         f"  /// Ordered by order{title} (checks/{title}.cpp).\n"
                         f"  std::vector<{title}Finding> {title};\n", path)


def banner(file: str) -> str:
    line = f"//===- {file} "
    return line + "-" * (75 - len(line)) + "===//"


def python_analysis(name: str, title: str) -> str:
    return f"""{banner(title + ".cpp")}
//
// {name}: a clobber of a scope's graph to the check's Python finding.
//
//===----------------------------------------------------------------------===//

#include "../Lowering.h"

namespace ddpguard {{
namespace python {{
namespace detail {{

void Lowering::find{title}(
    const AnalysisResult & /*R*/, const Clobber & /*C*/,
    CheckResult & /*Result*/) {{
  // Tell the check's clobbers by the writer's event (Graph.eventOf(C.Writer))
  // and C.Silent, as the other checks of PythonChecks.def do, then add the
  // finding to Result.{title}.
}}

void order{title}(CheckResult &Result) {{
  llvm::sort(Result.{title},
             [](const {title}Finding &A, const {title}Finding &B) {{
               return A.At < B.At;
             }});
}}

}} // namespace detail
}} // namespace python
}} // namespace ddpguard
"""


def python_rendering(name: str, title: str) -> str:
    return f"""{banner(title + ".cpp")}
//
// {name}: the check's Python findings, as the CLI's findings.
//
//===----------------------------------------------------------------------===//

#include "PythonCheck.h"

namespace ddpguard {{

void python_checks::render{title}(const PythonCheckContext & /*C*/) {{
  // For each finding of C.Result.{title} that is reported(C,
  // checks::{title}, offset): a Finding with message(), its notes (each with
  // its NoteKind), its fix, FixTitle and Applicability, into C.Findings.
}}

}} // namespace ddpguard
"""


def header(name: str, title: str, summary: str) -> str:
    guard = f"DDPGUARD_TIDY_{title.upper()}CHECK_H"
    return f"""//===- {title}Check.h - clang-tidy adapter ===//
//
// {name}: {summary} ({title}Check.md).
//
//===----------------------------------------------------------------------===//

#ifndef {guard}
#define {guard}

#include "FindingRecord.h"

namespace ddpguard {{
namespace tidy {{

class {title}Check : public RecordingCheck {{
public:
  using RecordingCheck::RecordingCheck;
  bool isLanguageVersionSupported(
      const clang::LangOptions &LangOpts) const override {{
    return LangOpts.CPlusPlus17;
  }}
  void registerMatchers(clang::ast_matchers::MatchFinder *Finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult &Result) override;
}};

}} // namespace tidy
}} // namespace ddpguard

#endif
"""


def source(title: str) -> str:
    return f"""//===- {title}Check.cpp ===//

#include "{title}Check.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace ddpguard {{
namespace tidy {{

void {title}Check::registerMatchers(MatchFinder *Finder) {{
  // The candidates: as the write checks, every function defined outside
  // system headers.
  Finder->addMatcher(functionDecl(isDefinition(),
                                  unless(isExpansionInSystemHeader()),
                                  unless(isImplicit()))
                         .bind("function"),
                     this);
}}

void {title}Check::check(const MatchFinder::MatchResult &Result) {{
  recordWith(Result.Context->getSourceManager());
  // Report through warning() and note(Loc, Text, NoteKind), and record a
  // fix with recordFix(), so that the CLI reads the finding as data.
}}

}} // namespace tidy
}} // namespace ddpguard
"""


def lit_test(name: str) -> str:
    return f"""// {name}: what the check finds here, and why.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>
"""


def doc(name: str, title: str, summary: str) -> str:
    """The check's page, with the sections every check's page has
    (test/lit/docs/check-pages.test)."""
    return f"""# {name}

{summary}. C++ (LibTorch); Python not yet. Fix: never
([CheckNames.h](CheckNames.h)). Sources: C++
[{title}Check.cpp]({title}Check.cpp), Python
[analysis](../PythonFrontend/checks/{title}.cpp) and
[rendering](../../tools/ddpguard/python-checks/{title}.cpp).

## What it finds

## Why it fails

## Examples

### C++

### Python

## Fixes and their safety

Fix availability: **never**.

## Options

## Limits

### C++

### Python

## Tests

All in [`checks/{name}`](../../test/lit/checks/{name}) (C++ `.cpp` and
Python `.test`; lit `--filter checks/{name}/`).
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the check's name, lower-case words joined by '-'")
    parser.add_argument("--summary", required=True, help="one line, as --list-checks shows it")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to write into")
    parser.add_argument("--dry-run", action="store_true",
                        help="name the files it would create or edit, and write nothing")
    args = parser.parse_args()
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)+", args.name):
        parser.error(f"'{args.name}' is not lower-case words joined by '-'")
    name, title, summary = args.name, camel(args.name), args.summary.rstrip(".")
    root = args.root
    table = root / "lib/Tidy/CheckNames.h"
    if f'"{name}"' in table.read_text():
        parser.error(f"{table}: '{name}' is a check already")

    edits = {
        table: lambda text: table_edit(text, name, title, summary, table),
        root / "lib/Tidy/DDPGuardTidyModule.cpp":
            lambda text: module_edit(text, name, title, root / "lib/Tidy/DDPGuardTidyModule.cpp"),
        root / "lib/CMakeLists.txt":
            lambda text: cmake_edit(text, title, root / "lib/CMakeLists.txt"),
        root / "lib/PythonFrontend/PythonChecks.def":
            lambda text: python_checks_edit(text, title,
                                            root / "lib/PythonFrontend/PythonChecks.def"),
        root / "lib/PythonFrontend/PythonFrontend.h":
            lambda text: python_finding_edit(text, name, title, summary,
                                             root / "lib/PythonFrontend/PythonFrontend.h"),
        root / "tools/ddpguard/CMakeLists.txt":
            lambda text: tools_cmake_edit(text, title, root / "tools/ddpguard/CMakeLists.txt"),
    }
    created = {
        root / f"lib/Tidy/{title}Check.h": header(name, title, summary),
        root / f"lib/Tidy/{title}Check.cpp": source(title),
        root / f"lib/PythonFrontend/checks/{title}.cpp": python_analysis(name, title),
        root / f"tools/ddpguard/python-checks/{title}.cpp": python_rendering(name, title),
        root / f"test/lit/checks/{name}/{name}.cpp": lit_test(name),
        root / f"lib/Tidy/{title}Check.md": doc(name, title, summary),
    }
    for path in created:
        if path.exists():
            parser.error(f"{path} exists already")
    for path, edit in edits.items():
        new = edit(path.read_text())
        if args.dry_run:
            print(f"edit   {path.relative_to(root)}")
        else:
            path.write_text(new)
    for path, text in created.items():
        if args.dry_run:
            print(f"create {path.relative_to(root)}")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
