"""Checks the relative links of the repository's Markdown files.

    links.test.py ROOT            every .md file under ROOT (outside build*/,
                                  .venv/, third_party/ and .git/)
    links.test.py --self-test DIR a small repository with every kind of broken
                                  link, made in DIR: each must be reported

A link (inline `[text](dest)`, image, reference definition `[label]: dest`,
autolink `<scheme:...>`, HTML href/src) outside code blocks and code spans
must

- be http(s) or mailto, or a relative path: no other scheme (file://), no
  absolute path (/work/..., /docs/...);
- stay inside ROOT once resolved from the linking file's directory (no `../`
  above the root) and name an existing file or directory there that is not
  ignored by git (a build tree, .venv);
- with an anchor `#frag`: in a Markdown target, name a heading by GitHub's
  slug rules (lower case; punctuation other than '-' and '_' dropped; each
  space a '-'; the n-th repeat of a slug gets '-n') or an HTML id/name; in
  another file, be a line anchor `#L12` or `#L12-L20` within the file.

Prints one line per broken link (file:line: message) and exits 1 if there
is any; otherwise prints how many links and files it checked.
"""
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

SKIP_DIRS = {".git", ".venv", "third_party", "node_modules", "__pycache__"}
ALLOWED_SCHEMES = {"http", "https", "mailto"}


def markdown_files(root):
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs
                            if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(directory, name)


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
LIST_ITEM = re.compile(r"^ {0,3}([-*+]|\d+[.)])( |$)")


def strip_code_blocks(lines):
    """The lines with fenced and indented code blocks blanked (line numbers
    kept)."""
    out = []
    fence = None
    in_list = False
    previous_blank = True
    in_indented = False
    for line in lines:
        if fence:
            out.append("")
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                fence = None
            continue
        match = FENCE.match(line)
        if match:
            fence = match.group(1)
            out.append("")
            previous_blank = False
            in_indented = False
            continue
        blank = not line.strip()
        indented = line.startswith("    ") or line.startswith("\t")
        if not blank and indented and (in_indented or (previous_blank and not in_list)):
            # An indented code block (not a list item's continuation).
            in_indented = True
            out.append("")
            previous_blank = False
            continue
        if not blank:
            in_indented = False
            if LIST_ITEM.match(line):
                in_list = True
            elif not line.startswith(" ") and previous_blank:
                in_list = False
        elif in_indented:
            out.append("")
            previous_blank = True
            continue
        out.append(line)
        previous_blank = blank
    return out


CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)


def blank_code_spans(text):
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


# Inline links and images: `](` then a destination (in <...> or without
# spaces, balanced parentheses allowed) and an optional title.
INLINE = re.compile(
    r"\]\(\s*(<[^>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.M)
AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>")
HTML_ATTR = re.compile(r"<[A-Za-z][^>]*?\b(?:href|src)\s*=\s*(\"[^\"]*\"|'[^']*')", re.S)


def links(text):
    """(offset, destination) of every link in text (code already blanked)."""
    for pattern in (INLINE, REFERENCE, AUTOLINK, HTML_ATTR):
        for match in pattern.finditer(text):
            dest = match.group(1)
            if dest[:1] in "<\"'" and dest[-1:] in ">\"'":
                dest = dest[1:-1]
            yield match.start(1), dest


HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
HTML_ID = re.compile(r"<[A-Za-z][^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']")


def slug(heading):
    """GitHub's anchor for a heading's text (github-slugger)."""
    # What the heading renders to: code spans as their text, links and
    # images as their text, HTML tags and emphasis markers dropped.
    parts = re.split(r"(`+)(.+?)\1", heading)
    text = ""
    for i in range(0, len(parts), 3):
        plain = parts[i]
        plain = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", plain)
        plain = re.sub(r"<[^>]+>", "", plain)
        plain = plain.replace("*", "")
        plain = re.sub(r"(?<!\w)_+|_+(?!\w)", "", plain)
        text += plain
        if i + 2 < len(parts):
            text += parts[i + 2]
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchor_cache = {}


def anchors(path):
    if path in _anchor_cache:
        return _anchor_cache[path]
    with open(path, encoding="utf-8") as f:
        raw = f.read().split("\n")
    lines = strip_code_blocks(raw)
    found = set()
    counts = {}

    def add(text):
        base = slug(text)
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else "%s-%d" % (base, n))

    for i, line in enumerate(lines):
        match = HEADING.match(line)
        if match:
            add(match.group(2) or "")
        elif (SETEXT.match(line) and i > 0 and lines[i - 1].strip()
              and not LIST_ITEM.match(lines[i - 1]) and not HEADING.match(lines[i - 1])):
            if set(line.strip()) == {"-"} and not lines[i - 1].strip():
                continue
            add(lines[i - 1].strip())
    for line in lines:
        found.update(HTML_ID.findall(line))
    _anchor_cache[path] = found
    return found


_git_roots = {}


def ignored_by_git(root, path):
    """Whether git ignores path, when root is the top of a git work tree."""
    if root not in _git_roots:
        try:
            top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True).stdout.strip()
        except OSError:
            top = ""
        _git_roots[root] = bool(top) and os.path.realpath(top) == os.path.realpath(root)
    if not _git_roots[root]:
        return False
    try:
        result = subprocess.run(["git", "-C", root, "check-ignore", "-q", path],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return False
    return result.returncode == 0


def check_link(root, source, dest):
    """The problem with one link, or None."""
    if not dest:
        return "empty link"
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", dest)
    if scheme and not re.match(r"[A-Za-z]:[\\/]", dest):
        if scheme.group(1).lower() in ALLOWED_SCHEMES:
            return None
        return "'%s': only http(s) and mailto links may leave the repository" % dest
    if dest.startswith("//"):
        return "'%s': a link to another host needs https:" % dest
    path, _, fragment = dest.partition("#")
    path = urllib.parse.unquote(path.partition("?")[0])
    fragment = urllib.parse.unquote(fragment)
    if path.startswith("/") or path.startswith("\\") or re.match(r"[A-Za-z]:[\\/]", path):
        return "'%s': absolute path; link relative to this file" % dest
    root_real = os.path.realpath(root)
    target = os.path.normpath(os.path.join(os.path.dirname(source), path)) if path else source
    relative = os.path.relpath(os.path.realpath(target), root_real)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return "'%s': leaves the repository" % dest
    if not os.path.exists(target):
        return "'%s': no such file (%s)" % (dest, os.path.relpath(target, root))
    if path and ignored_by_git(root, target):
        return "'%s': %s is ignored by git, not part of the repository" % (
            dest, os.path.relpath(target, root))
    if not fragment:
        return None
    if os.path.isdir(target):
        return "'%s': an anchor into a directory" % dest
    if target.endswith(".md"):
        if fragment in anchors(target):
            return None
        return "'%s': no heading with anchor '#%s' in %s" % (
            dest, fragment, os.path.relpath(target, root))
    lines = re.fullmatch(r"L(\d+)(?:-L(\d+))?", fragment)
    if not lines:
        return "'%s': '#%s' is not a line anchor (#L12, #L12-L20)" % (dest, fragment)
    with open(target, "rb") as f:
        count = len(f.read().splitlines())
    if any(int(n) < 1 or int(n) > count for n in lines.groups() if n):
        return "'%s': %s has %d lines" % (dest, os.path.relpath(target, root), count)
    return None


def check(root):
    root = os.path.abspath(root)
    problems = []
    checked = files = 0
    for source in markdown_files(root):
        files += 1
        with open(source, encoding="utf-8") as f:
            raw = f.read().split("\n")
        text = blank_code_spans("\n".join(strip_code_blocks(raw)))
        for offset, dest in sorted(links(text)):
            checked += 1
            problem = check_link(root, source, dest.strip())
            if problem:
                line = text.count("\n", 0, offset) + 1
                problems.append("%s:%d: %s" % (os.path.relpath(source, root), line, problem))
    return problems, checked, files


def self_test(directory):
    """Every kind of broken link is reported, and only those."""
    os.makedirs(directory, exist_ok=True)
    root = tempfile.mkdtemp(prefix="repo-", dir=directory)
    files = {
        "README.md": "\n".join([
            "# Title",
            "## The `forward_group` API (runtime)",
            "## Title",
            "ok [a](docs/a.md) [b](docs/a.md#some-heading) [c](#title-1)",
            "ok [d](#the-forward_group-api-runtime) [e](https://example.com/x)",
            "ok ![img](docs/) [f](docs/code.cpp#L2-L3) <https://example.com>",
            "ok [g](docs/a.md#setext-heading) [h](docs/a.md#explicit)",
            "`[not a link](missing.md)`",
            "```",
            "[not a link](missing.md)",
            "```",
            "",
            "    [indented code](missing.md)",
            "",
            "bad [1](docs/missing.md) [2](docs/a.md#no-such-heading)",
            "bad [3](../outside.md) [4](/work/shared/DESIGN.md)",
            "bad [5](file:///work/shared/DESIGN.md) [6](docs/code.cpp#L9)",
            "bad [7",
            "across lines](docs/gone.md) [8](docs/code.cpp#anchor)",
            "",
            "[9]: docs/also-missing.md",
            "<a href=\"../../escape.md\">10</a>",
            "- item",
            "",
            "    [11](docs/in-list.md)",
        ]),
        "docs/a.md": "\n".join([
            "# Some heading",
            "Setext heading",
            "--------------",
            "<a id=\"explicit\"></a>",
            "[back](../README.md#title) [bad 12](../README.md#missing)",
        ]),
        "docs/code.cpp": "one\ntwo\nthree\n",
        "build/notes.md": "[ignored](missing.md)\n",
    }
    for name, content in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
    problems, checked, _ = check(root)
    expected = [
        ("README.md:15:", "'docs/missing.md': no such file"),
        ("README.md:15:", "no heading with anchor '#no-such-heading' in docs/a.md"),
        ("README.md:16:", "'../outside.md': leaves the repository"),
        ("README.md:16:", "'/work/shared/DESIGN.md': absolute path"),
        ("README.md:17:", "'file:///work/shared/DESIGN.md': only http(s)"),
        ("README.md:17:", "'docs/code.cpp#L9': docs/code.cpp has 3 lines"),
        ("README.md:19:", "'docs/gone.md': no such file"),
        ("README.md:19:", "'#anchor' is not a line anchor"),
        ("README.md:21:", "'docs/also-missing.md': no such file"),
        ("README.md:22:", "'../../escape.md': leaves the repository"),
        ("README.md:25:", "'docs/in-list.md': no such file"),
        ("docs/a.md:5:", "no heading with anchor '#missing' in README.md"),
    ]
    missing = [e for e in expected
               if not any(p.startswith(e[0]) and e[1] in p for p in problems)]
    unexpected = [p for p in problems
                  if not any(p.startswith(e[0]) and e[1] in p for e in expected)]
    for p in problems:
        print(p)
    if missing or unexpected or checked != 23:
        print("self-test failed: missing %r, unexpected %r, %d links checked"
              % (missing, unexpected, checked))
        return 1
    print("self-test: %d problems found as expected" % len(problems))
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-test":
        return self_test(argv[2])
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[0])
        return 2
    problems, checked, files = check(argv[1])
    for problem in problems:
        print(problem)
    if problems:
        print("%d broken links in %d Markdown files" % (len(problems), files))
        return 1
    print("links: %d links in %d Markdown files resolve inside the repository"
          % (checked, files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
