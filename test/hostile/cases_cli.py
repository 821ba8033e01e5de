"""Hostile inputs of the CLI's own: files, folders, configuration, messages
(issue 31: items 2, 3, 4, 5, 11, 12, deliverables 2 and 3, and the classes
that already passed when it was filed)."""
import re

from hostile_case import (CLEAN, INPUTS, TWO_VIEW, TWO_VIEW_FINDING_LINE, Case,
                          Fifo, Folder, Link, WithMode)

F = TWO_VIEW_FINDING_LINE
CHECK = "ddp-multiple-forward-before-backward"
MOCK_FLAGS = ["-std=c++17", "-isystem", str(INPUTS / "mock")]
CPP_TWO_VIEWS = (INPUTS / "cli" / "two-views.cpp").read_bytes()
CRASHED = r"PLEASE submit|Stack dump|terminate called"
CPP_ADVICE = r"compilation database|compile_commands"


def noqa(comment: str) -> bytes:
    """two_view.py with comment on the warning's line."""
    return TWO_VIEW.replace(b"out2 = model(input1)\n",
                            b"out2 = model(input1)  " + comment.encode() + b"\n")


CASES = []
add = CASES.append

# --- Classes that already passed when issue 31 was filed --------------------
add(Case("empty_file", {"a.py": b""}, ["a.py"], exit=0, findings=[]))
add(Case("binary_file", {"a.py": bytes(range(256)) * 64, "b.py": TWO_VIEW},
         ["."], exit=2, findings=[f"b.py:{F}"], stderr=[r"a\.py: "]))
add(Case("nul_byte", {"a.py": TWO_VIEW.replace(b"import torch\n", b"import\0torch\n")},
         ["a.py"], exit=(1, 2), not_stderr=[CRASHED]))
add(Case("invalid_utf8", {"a.py": TWO_VIEW + b"s = '\xff\xfe'\n"},
         ["a.py"], exit=(1, 2), not_stderr=[CRASHED]))
add(Case("utf8_bom", {"a.py": b"\xef\xbb\xbf" + TWO_VIEW}, ["a.py"], exit=1,
         findings=[f"a.py:{F}"]))
add(Case("utf16_bom", {"a.py": b"\xff\xfe" + TWO_VIEW.decode().encode("utf-16-le")},
         ["a.py"], exit=(1, 2), not_stderr=[CRASHED]))
add(Case("crlf", {"a.py": TWO_VIEW.replace(b"\n", b"\r\n")}, ["a.py"], exit=1,
         findings=[f"a.py:{F}"]))
add(Case("tabs", {"a.py": TWO_VIEW.replace(b"    ", b"\t")}, ["a.py"], exit=1,
         findings=[f"a.py:{F}"]))
# tree-sitter's grammar still takes Python 2's print and exec statements.
add(Case("python2_source", {"a.py": b"print 'hello'\nexec 'x = 1'\n" + TWO_VIEW,
                            "b.py": b"print >>f, 'x'\nx = `1`\nexec 'y'\n"},
         ["a.py", "b.py"], exit=1, findings=[f"a.py:{2 + F}"], not_stderr=[r"."]))
add(Case("huge_file", {"a.py": b"x = 1\n" * 300_000 + TWO_VIEW}, ["a.py"], exit=1,
         findings=[f"a.py:{300_000 + F}"], timeout=120))
add(Case("huge_line", {"a.py": b"x = '" + b"a" * 10_000_000 + b"'\n" + TWO_VIEW},
         ["a.py"], exit=1, findings=[f"a.py:{1 + F}"], timeout=120))
# 5 s for 300,000 elements (3,000,000 took over 120 s when measured).
add(Case("long_list_line", {"a.py": b"x = [" + b"1, " * 300_000 + b"]\n" + TWO_VIEW},
         ["a.py"], exit=1, findings=[f"a.py:{1 + F}"], timeout=120))
add(Case("unreadable_file", {"a.py": WithMode(TWO_VIEW, 0o000), "b.py": TWO_VIEW},
         ["a.py", "b.py"], exit=2, unprivileged=True, findings=[f"b.py:{F}"],
         stderr=[r"a\.py: cannot read: [Pp]ermission denied"]))
add(Case("malformed_configuration",
         {"pyproject.toml": b"[tool.ddpguard\ntorch-version = 2\n", "a.py": TWO_VIEW},
         ["a.py"], exit=2, findings=[f"a.py:{F}"],
         stderr=[r"pyproject\.toml: configuration error at line 1"]))
add(Case("race_during_fix", {"a.py": TWO_VIEW},
         ["--fix", "--run-before-writing-fixes=printf '# edited\\n' >> a.py", "a.py"],
         exit=2, changed={"a.py": TWO_VIEW + b"# edited\n"},
         stderr=[r"a\.py: .*changed"]))

# --- 31.2: configuration that is not UTF-8, or holds NUL ---------------------
# The file is named with its place; the .py file is still checked.
for where, folder in (("", ""), ("parent_", "sub/")):
    for name in ("pyproject.toml", ".ddpguard"):
        header = b"[tool.ddpguard]\n" if name == "pyproject.toml" else b""
        stem = name.strip(".").replace(".", "_")
        for kind, text in (("invalid_utf8", b'torch-version = "2.12.0\xff"\n'),
                           ("nul", b'torch-version = "2.12\x000"\n'),
                           ("nul_in_comment", b"# \x00\n"),
                           ("nul_in_key", b"a\x00b = 1\n")):
            add(Case(f"config_{where}{stem}_{kind}",
                     {name: header + text, f"{folder}a.py": TWO_VIEW},
                     [f"{folder}a.py"], exit=2, item="31.2",
                     findings=[f"{folder}a.py:{F}"],
                     stderr=[rf"{re.escape(name)}: configuration error at line \d+, column \d+: "
                             r"the file (is not UTF-8|holds a NUL)"]))

# toml++ 3.3 asserts on this in a build without NDEBUG, then reports it.
add(Case("config_bad_time", {".ddpguard": b"torch-version = 1979-05-27T.07:32:00Z\n",
                             "a.py": TWO_VIEW},
         ["a.py"], exit=2, item="31.2", findings=[f"a.py:{F}"],
         stderr=[r"\.ddpguard: configuration error at line 1, column \d+: "]))

# --- 31.12: noqa as flake8 and ruff spell it ---------------------------------
for name, comment in (("upper", "# NOQA"), ("no_space", "#noqa"), ("mixed_case", "# NoQa"),
                      ("codes_no_space", f"#noqa:{CHECK}"),
                      ("codes_upper", f"# NOQA: E501,{CHECK.upper()}"),
                      ("codes_spaces", f"# noqa : E501 {CHECK}"),
                      ("after_comment", "# type: ignore  # noqa")):
    add(Case(f"noqa_{name}", {"a.py": noqa(comment)}, ["a.py"], exit=0, findings=[],
             item="31.12"))
for name, comment in (("other_code", "# noqa: E501"), ("other_codes", "#NOQA:E501,F401")):
    add(Case(f"noqa_{name}_reports", {"a.py": noqa(comment)}, ["a.py"], exit=1,
             findings=[f"a.py:{F}"], item="31.12"))

# --- 31.3, deliverable 2: each real folder once, no folder links unless asked
LOOPS = {"pkg/a.py": TWO_VIEW, "pkg/up": Link(".."), "pkg/sub/b.py": TWO_VIEW,
         "pkg/sub/back": Link("../.."), "pkg/sub/self": Link(".")}
for follow in ([], ["--follow-links"]):
    suffix = "_followed" if follow else ""
    add(Case(f"folder_link_loops{suffix}", LOOPS, follow + ["pkg"], exit=1, timeout=20,
             findings=[f"pkg/a.py:{F}", f"pkg/sub/b.py:{F}"], item="31.3"))
add(Case("folder_link_not_followed",
         {"src/a.py": TWO_VIEW, "elsewhere/b.py": TWO_VIEW, "src/linked": Link("../elsewhere")},
         ["src"], exit=1, findings=[f"src/a.py:{F}"], item="31.3"))
add(Case("folder_link_followed_when_asked",
         {"src/a.py": TWO_VIEW, "elsewhere/b.py": TWO_VIEW, "src/linked": Link("../elsewhere")},
         ["--follow-links", "src"], exit=1,
         findings=[f"src/a.py:{F}", f"src/linked/b.py:{F}"], item="31.3"))
add(Case("file_link_followed", {"src/a.py": Link("../real.py"), "real.py": TWO_VIEW},
         ["src"], exit=1, findings=[f"src/a.py:{F}"], item="31.3"))

# --- 31.4, deliverable 2: regular files only ----------------------------------
for name, content in (("fifo", Fifo()), ("dev_zero", Link("/dev/zero")),
                      ("dev_urandom", Link("/dev/urandom"))):
    add(Case(f"walk_skips_{name}", {"src/bad.py": content, "src/ok.py": TWO_VIEW,
                                    "src/bad.cpp": content},
             ["src"], exit=1, timeout=20, findings=[f"src/ok.py:{F}"], item="31.4",
             stderr=[r"^ddpguard: skipped src/bad\.py: it is a (FIFO|character device), "
                     r"not a regular file$"]))
add(Case("named_fifo_is_an_error", {"bad.py": Fifo(), "ok.py": TWO_VIEW},
         ["bad.py", "ok.py"], exit=2, timeout=20, findings=[f"ok.py:{F}"], item="31.4",
         stderr=[r"bad\.py: not read: it is a FIFO, not a regular file"]))
add(Case("config_fifo_is_not_read", {"pyproject.toml": Fifo(), "requirements.txt": Fifo(),
                                     "a.py": TWO_VIEW},
         ["a.py"], exit=1, timeout=20, findings=[f"a.py:{F}"], item="31.4"))

# --- deliverable 2: .gitignore, .ignore, the folders ruff skips ---------------
add(Case("gitignore_in_repository",
         {".git/HEAD": b"ref: refs/heads/main\n",
          ".gitignore": b"# generated\n/gen.py\nout/\n**/tmp_*.py\n*.py[cod]\n!keep/tmp_keep.py\n",
          "gen.py": TWO_VIEW, "sub/gen.py": TWO_VIEW, "out/a.py": TWO_VIEW,
          "x/tmp_a.py": TWO_VIEW, "keep/tmp_keep.py": TWO_VIEW, "main.py": TWO_VIEW,
          "nested/.gitignore": b"*.py\n!main.py\n", "nested/main.py": TWO_VIEW,
          "nested/other.py": TWO_VIEW},
         ["."], exit=1, item="deliverable 2",
         findings=[f"sub/gen.py:{F}", f"keep/tmp_keep.py:{F}", f"main.py:{F}",
                   f"nested/main.py:{F}"]))
add(Case("gitignore_outside_repository_is_not_read",
         {".gitignore": b"*.py\n", "a.py": TWO_VIEW}, ["."], exit=1,
         findings=[f"a.py:{F}"], item="deliverable 2"))
add(Case("dot_ignore_and_git_exclude",
         {".ignore": b"skipped/\n", "skipped/a.py": TWO_VIEW, "b.py": TWO_VIEW,
          "repo/.git/info/exclude": b"private.py\n", "repo/private.py": TWO_VIEW,
          "repo/public.py": TWO_VIEW},
         ["."], exit=1, findings=[f"b.py:{F}", f"repo/public.py:{F}"],
         item="deliverable 2"))
add(Case("gitignore_of_parent_folder",
         {".git/HEAD": b"", ".gitignore": b"src/gen/\n", "src/gen/a.py": TWO_VIEW,
          "src/b.py": TWO_VIEW},
         ["src"], exit=1, findings=[f"src/b.py:{F}"], item="deliverable 2"))
add(Case("gitignore_hostile_pattern",
         {".git/HEAD": b"", ".gitignore": b"[\n\\\n*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n",
          ("a" * 200) + ".py": TWO_VIEW},
         ["."], exit=1, timeout=20, findings=[f"{'a' * 200}.py:{F}"],
         item="deliverable 2"))
add(Case("default_skipped_folders",
         {"build/a.py": TWO_VIEW, "node_modules/a.py": TWO_VIEW, ".venv/a.py": TWO_VIEW,
          "venv/a.py": TWO_VIEW, "dist/a.py": TWO_VIEW, ".hidden/a.py": TWO_VIEW,
          "env/pyvenv.cfg": b"", "env/a.py": TWO_VIEW, "__pycache__/a.py": TWO_VIEW,
          "src/a.py": TWO_VIEW},
         ["."], exit=1, findings=[f"src/a.py:{F}"], item="deliverable 2"))
add(Case("named_paths_are_always_checked",
         {".git/HEAD": b"", ".gitignore": b"b.py\nc.py\n", "build/a.py": TWO_VIEW,
          "node_modules/b.py": TWO_VIEW, "c.py": TWO_VIEW},
         ["build", "node_modules/b.py", "c.py"], exit=1, item="deliverable 2",
         findings=[f"build/a.py:{F}", f"node_modules/b.py:{F}", f"c.py:{F}"]))
add(Case("unreadable_subfolder_warns",
         {"src/a.py": TWO_VIEW, "src/locked/b.py": TWO_VIEW, "src/locked": Folder(0o000)},
         ["src"], exit=1, unprivileged=True, findings=[f"src/a.py:{F}"], item="31.11",
         stderr=[r"^ddpguard: warning: .*src/locked: cannot read this folder: "
                 r"[Pp]ermission denied"]))

# --- 31.5, deliverable 3: a Python project with a C++ source ------------------
EXTENSION = {"train.py": TWO_VIEW, "csrc/ext.cpp": b"int twice(int x) { return 2 * x; }\n",
             "pyproject.toml": b"[project]\nname = 'p'\n"}
add(Case("python_project_with_cpp_source", EXTENSION, ["."], exit=1, item="31.5",
         findings=[f"train.py:{F}"],
         stderr=[r"^ddpguard: skipped csrc/ext\.cpp: no compilation database .*"
                 r"pass -p <build dir> or compile flags after '--'"],
         not_stderr=[r"error"]))
add(Case("python_project_with_cpp_sources_one_line",
         dict(EXTENSION, **{"csrc/b.cpp": b"", "csrc/c.cu": b""}), ["."], exit=1,
         item="31.5", findings=[f"train.py:{F}"],
         stderr=[r"^ddpguard: skipped 3 C\+\+ sources \(csrc/b\.cpp, csrc/c\.cu, "
                 r"csrc/ext\.cpp\): no compilation database"]))
add(Case("python_project_cpp_checked_with_flags",
         dict(EXTENSION, **{"csrc/views.cpp": CPP_TWO_VIEWS}), ["."] + ["--"] + MOCK_FLAGS,
         exit=1, item="31.5", findings=[f"train.py:{F}", "csrc/views.cpp:6"],
         not_stderr=[r"skipped"]))
add(Case("python_project_cpp_checked_with_database",
         dict(EXTENSION, **{"csrc/views.cpp": CPP_TWO_VIEWS,
                            "build/compile_commands.json":
                                '[{"directory": "{dir}", "file": "{dir}/csrc/views.cpp", '
                                f'"command": "clang++ {" ".join(MOCK_FLAGS)} -c '
                                '{dir}/csrc/views.cpp"}]'}),
         ["-p", "build", "."], exit=1, item="31.5",
         findings=[f"train.py:{F}", "csrc/views.cpp:6"], not_stderr=[r"skipped"]))
add(Case("cpp_only_folder_still_needs_database", {"csrc/ext.cpp": b"int x;\n"}, ["csrc"],
         exit=2, item="31.5", stderr=[r"no compilation database found"]))
add(Case("excluded_cpp_folder",
         dict(EXTENSION, **{"pyproject.toml": b'[tool.ddpguard]\nexclude = ["csrc"]\n'}),
         ["."], exit=1, item="31.5", findings=[f"train.py:{F}"], not_stderr=[r"."]))

# --- 31.11: messages ----------------------------------------------------------
add(Case("missing_folder", {}, ["nowhere"], exit=2, item="31.11",
         stderr=[r"^ddpguard: error: nowhere: no such file or directory$"],
         not_stderr=[CPP_ADVICE]))
add(Case("missing_python_file", {}, ["absent.py"], exit=2, item="31.11",
         stderr=[r"^ddpguard: error: .*absent\.py: no such file or directory$"]))
add(Case("notebook", {"a.ipynb": b'{"cells": []}'}, ["a.ipynb"], exit=2, item="31.11",
         stderr=[r"a\.ipynb: is a Jupyter notebook"], not_stderr=[CPP_ADVICE]))
add(Case("stub_file", {"a.pyi": b"def f(x: int) -> int: ...\n"}, ["a.pyi"], exit=0,
         item="31.11", findings=[], not_stderr=[r"."]))
add(Case("no_arguments", {}, [], exit=2, item="31.11",
         stderr=[r"no files given: .*'ddpguard \.'"], not_stderr=[r"compilation database"]))
add(Case("file_named_three_times", {"a.py": TWO_VIEW}, ["a.py", "a.py", "./a.py"],
         exit=1, item="31.11", findings=[f"a.py:{F}"]))
add(Case("file_named_and_in_folder", {"src/a.py": TWO_VIEW}, ["src/a.py", "src"],
         exit=1, item="31.11", findings=[f"src/a.py:{F}"]))
add(Case("cpp_file_named_twice", {"views.cpp": CPP_TWO_VIEWS},
         ["views.cpp", "views.cpp", "--"] + MOCK_FLAGS, exit=1, item="31.11",
         findings=["views.cpp:6"]))

# --- 31.11: --line-filter is JSON, and its errors say so --------------------
add(Case("line_filter_bad_json", {"a.py": TWO_VIEW}, ["--line-filter=[{]", "a.py"],
         exit=2, item="31.11", stderr=[r"invalid --line-filter '\[\{\]': not valid JSON: "
                                       r"line 1, column \d+"],
         not_stderr=[r"YAML"]))
add(Case("line_filter_not_a_list", {"a.py": TWO_VIEW},
         ['--line-filter={"name": "a.py"}', "a.py"], exit=2, item="31.11",
         stderr=[r"invalid --line-filter .*: expected a JSON array"], not_stderr=[r"YAML"]))

# --- 31.11: torch-version as torch.__version__ prints it -------------------
add(Case("torch_version_local_label_in_configuration",
         {"pyproject.toml": b'[tool.ddpguard]\ntorch-version = "2.11.0+cu130"\n',
          "a.py": TWO_VIEW},
         ["a.py"], exit=1, item="31.11", findings=[f"a.py:{F}"],
         stdout=[r"judged by torch 2\.11\.0, from \[tool\.ddpguard\]"]))
add(Case("torch_version_local_label_option", {"a.py": TWO_VIEW},
         ["--torch-version=2.11.0+cu130", "a.py"], exit=1, item="31.11",
         findings=[f"a.py:{F}"], stdout=[r"judged by torch 2\.11\.0, from --torch-version"]))
add(Case("torch_version_bad_local_label", {"a.py": TWO_VIEW},
         ["--torch-version=2.11.0+", "a.py"], exit=2, item="31.11",
         stderr=[r"--torch-version expects a version"]))
