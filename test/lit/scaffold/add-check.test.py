"""Runs scripts/add_check.py on a name that is no check of the table, so the
scaffold test cannot collide with a check added later.

    add-check.test.py SRC_ROOT run ARGS...   runs add_check.py with ARGS, where
                                             {new} is the derived name and
                                             {taken} the table's first check
    add-check.test.py SRC_ROOT show FILE     prints FILE
    add-check.test.py SRC_ROOT changed TREE  prints, as --dry-run does, the
                                             files of TREE (a copy of lib/ and
                                             tools/ the scaffold wrote into)
                                             that differ from SRC_ROOT's
    add-check.test.py SRC_ROOT compile BUILD TREE
                                             compiles (-fsyntax-only) TREE's
                                             new Python analysis and rendering
                                             files with TREE's headers, with
                                             the flags BUILD's
                                             compile_commands.json gives their
                                             neighbours

Output has the derived name replaced by NEW-NAME and its CamelCase title by
NewTitle, so that FileCheck patterns stay fixed. The name is the first of
scaffold-probe1-before-backward, scaffold-probe2-..., that is not in
SRC_ROOT's lib/Tidy/CheckNames.h.
"""
import filecmp
import json
import os
import re
import shlex
import subprocess
import sys


def names(src_root):
    table = open(f"{src_root}/lib/Tidy/CheckNames.h").read()
    return re.findall(r'StringLiteral \w+ =\s*"([a-z0-9-]+)"', table)


def derived(taken):
    n = 1
    while f"scaffold-probe{n}-before-backward" in taken:
        n += 1
    return f"scaffold-probe{n}-before-backward"


def changed(src_root, tree):
    """The files of tree that are new or differ from src_root's, sorted."""
    lines = []
    for folder, _, files in os.walk(tree):
        for name in files:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, tree)
            original = os.path.join(src_root, relative)
            if not os.path.exists(original):
                lines.append(f"create {relative}")
            elif not filecmp.cmp(path, original, shallow=False):
                lines.append(f"edit   {relative}")
    return "".join(line + "\n" for line in sorted(lines))


def compile_new(src_root, build, tree, title):
    """Compiles each new Python file of tree with the flags of a file beside
    it in src_root, every include folder of src_root taken from tree."""
    commands = json.load(open(os.path.join(build, "compile_commands.json")))
    by_file = {entry["file"]: entry for entry in commands}
    output, status = "", 0
    for new, neighbour in [(f"lib/PythonFrontend/checks/{title}.cpp", "lib/PythonFrontend/Findings.cpp"),
                           (f"tools/ddpguard/python-checks/{title}.cpp",
                            "tools/ddpguard/PythonFiles.cpp")]:
        entry = by_file[os.path.join(src_root, neighbour)]
        args = entry.get("arguments") or shlex.split(entry["command"])
        kept, skip = [], False
        for arg in args:
            if skip:
                skip = False
            elif arg in ("-o", "-MF", "-MT", "-MQ", "-c"):
                skip = True
            elif arg.startswith("-I" + src_root):
                kept.append("-I" + tree + arg[2 + len(src_root):])
            elif arg != "-MD":
                kept.append(arg)
        result = subprocess.run(kept + ["-fsyntax-only", os.path.join(tree, new)],
                                cwd=entry["directory"], capture_output=True, text=True)
        output += result.stdout + result.stderr
        output += f"{'compiled' if result.returncode == 0 else 'FAILED'} {new}\n"
        status = status or result.returncode
    return output, status


def main():
    src_root, mode, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    existing = names(src_root)
    new = derived(existing)
    title = "".join(part.capitalize() for part in new.split("-"))
    if mode == "run":
        args = [a.replace("{new}", new).replace("{taken}", existing[0]) for a in rest]
        result = subprocess.run([sys.executable, f"{src_root}/scripts/add_check.py", *args],
                                capture_output=True, text=True)
        output, status = result.stdout + result.stderr, result.returncode
    elif mode == "changed":
        output, status = changed(src_root, rest[0]), 0
    elif mode == "compile":
        output, status = compile_new(src_root, rest[0], rest[1], title)
    else:
        output, status = open(rest[0].replace("{new}", new).replace("{title}", title)).read(), 0
    sys.stdout.write(output.replace(title, "NewTitle").replace(new, "NEW-NAME"))
    return status


if __name__ == "__main__":
    sys.exit(main())
