"""Runs scripts/add_check.py on a name that is no check of the table, so the
scaffold test cannot collide with a check added later.

    add-check.test.py SRC_ROOT run ARGS...   runs add_check.py with ARGS, where
                                             {new} is the derived name and
                                             {taken} the table's first check
    add-check.test.py SRC_ROOT show FILE     prints FILE

Output has the derived name replaced by NEW-NAME and its CamelCase title by
NewTitle, so that FileCheck patterns stay fixed. The name is the first of
scaffold-probe1-before-backward, scaffold-probe2-..., that is not in
SRC_ROOT's lib/Tidy/CheckNames.h.
"""
import re
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
    else:
        output, status = open(rest[0].replace("{new}", new).replace("{title}", title)).read(), 0
    sys.stdout.write(output.replace(title, "NewTitle").replace(new, "NEW-NAME"))
    return status


if __name__ == "__main__":
    sys.exit(main())
