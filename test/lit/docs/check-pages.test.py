"""Checks that every check of the table has its page with the same sections.

    check-pages.test.py ROOT   the rows of ROOT/lib/Tidy/CheckNames.h

Each row's doc page (the table's `Doc` field) must exist and have, in this
order, the level-2 sections SECTIONS, with `### C++` and `### Python` under
"Examples" and "Limits": one page per check, covering both frontends.
Prints one line per problem and exits 1 if there is any.
"""
import os
import re
import sys

SECTIONS = ["What it finds", "Why it fails", "Examples", "Fixes and their safety",
            "Options", "Limits", "Tests"]
PER_LANGUAGE = {"Examples", "Limits"}


def pages(root):
    table = open(os.path.join(root, "lib", "Tidy", "CheckNames.h")).read()
    return re.findall(r'"(lib/Tidy/\w+\.md)"', table)


def problems(root, page):
    path = os.path.join(root, page)
    if not os.path.isfile(path):
        return [f"{page}: the table names it, but there is no such file"]
    level2 = []
    subsections = {}
    in_code = False
    for line in open(path):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("## "):
            level2.append(line[3:].strip())
            subsections[level2[-1]] = []
        elif not in_code and line.startswith("### ") and level2:
            subsections[level2[-1]].append(line[4:].strip())
    found = []
    if level2 != SECTIONS:
        found.append(f"{page}: sections {level2}, expected {SECTIONS}")
    for section in PER_LANGUAGE & set(level2):
        if subsections[section][:2] != ["C++", "Python"]:
            found.append(f"{page}: '{section}' must open with '### C++' and '### Python'")
    return found


def main():
    root = sys.argv[1]
    checked = pages(root)
    found = [p for page in checked for p in problems(root, page)]
    for problem in found:
        print(problem)
    if not checked:
        print("no doc page found in lib/Tidy/CheckNames.h")
        return 1
    if not found:
        print(f"check pages: {len(checked)} pages with the same sections")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
