#!/usr/bin/env python3
"""Which parser the Python frontend stands on: speed, syntax and recovery.

    python3 bench/python-parsers/run.py [--runs N] [--files DIR]

Needs the packages of requirements.txt beside it (a scratch venv will do:
`python3 -m venv /tmp/pp && /tmp/pp/bin/pip install -r
bench/python-parsers/requirements.txt`). Parses, with tree-sitter's Python
grammar (the baseline), Python's own `ast` and LibCST: one large real script
(torch's nn/parallel/distributed.py, from the torch the interpreter can
import, else --big) and 200 files (torch's own, else --files), best-of-N wall
times as ratios over tree-sitter's. Then what each makes of a half-typed
function (an editor's input) and of syntax newer than the interpreter.
"""
import argparse
import ast
import glob
import importlib.util
import os
import sys
import time

import libcst
import tree_sitter
import tree_sitter_python

HALF_TYPED = b"""def step(model, x, y):
    out1 = model(x
    out2 = model(y)
    (out1 - out2).pow(2).sum().backward()
"""
# PEP 695 (3.12) and PEP 701 f-strings (3.12).
NEWER_SYNTAX = b"""type Batch = list[int]
def first[T](xs: list[T]) -> T: return xs[0]
label = f"{'loss' + f"{1}"}"
"""


def best(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def torch_dir():
    spec = importlib.util.find_spec("torch")
    return os.path.dirname(spec.origin) if spec and spec.origin else None


def calls(node, found):
    if node.type == "call":
        found.append(" ".join(node.child_by_field_name("function").text.decode().split()))
    for child in node.children:
        calls(child, found)
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--big", help="a large script (default: torch's distributed.py)")
    p.add_argument("--files", help="a folder of .py files (default: torch's)")
    args = p.parse_args()
    root = torch_dir()
    big = args.big or (root and os.path.join(root, "nn/parallel/distributed.py"))
    folder = args.files or root
    if not big or not folder:
        sys.exit("no torch to take the scripts from: pass --big and --files")
    big_source = open(big, "rb").read()
    sources = [open(f, "rb").read()
               for f in sorted(glob.glob(os.path.join(folder, "**/*.py"), recursive=True))[:200]]
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))
    parsers = {
        "tree-sitter": parser.parse,
        "ast": ast.parse,
        "libcst": libcst.parse_module,
    }
    newline = b"\n"
    big_label = f"{os.path.basename(big)}, {big_source.count(newline)} lines"
    files_label = f"{len(sources)} files, {sum(s.count(newline) for s in sources)} lines"
    print(f"{'parser':12} {'large script':>26} {'200 files':>26}")
    print(f"{'':12} {big_label:>26} {files_label:>26}")
    baseline = None
    for name, parse in parsers.items():
        one = best(lambda: parse(big_source), args.runs)
        many = best(lambda: [parse(s) for s in sources], max(1, args.runs // 2))
        baseline = baseline or (one, many)
        print(f"{name:12} {one * 1e3:9.1f} ms ({one / baseline[0]:5.2f}x)     "
              f"{many * 1e3:9.1f} ms ({many / baseline[1]:5.2f}x)")
    print(f"\nhalf-typed function ({HALF_TYPED.count(newline)} lines, an unclosed call):")
    tree = parser.parse(HALF_TYPED)
    print(f"  tree-sitter: a tree with errors ({tree.root_node.has_error}); "
          f"calls it still sees: {', '.join(calls(tree.root_node, []))}")
    for name in ("ast", "libcst"):
        try:
            parsers[name](HALF_TYPED)
            print(f"  {name}: parsed")
        except Exception as error:  # each parser raises its own syntax error
            print(f"  {name}: no tree ({type(error).__name__})")
    print(f"\nPython 3.12 syntax, on Python {sys.version.split()[0]}:")
    for name, parse in parsers.items():
        try:
            tree = parse(NEWER_SYNTAX)
            bad = name == "tree-sitter" and tree.root_node.has_error
            print(f"  {name}: {'errors' if bad else 'parsed'}")
        except Exception as error:
            print(f"  {name}: no tree ({type(error).__name__})")


if __name__ == "__main__":
    main()
