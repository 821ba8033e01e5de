"""Hostile inputs of the Python parser (issue 31: items 1, 6, 7): deep
nesting, the spellings of Python 3.12 to 3.14 the pinned grammar lacks, line
endings, and the files of torch's own source it once misread."""
import pathlib
import sys

from hostile_case import TWO_VIEW, TWO_VIEW_FINDING_LINE, Case

F = TWO_VIEW_FINDING_LINE
CRASHED = r"PLEASE submit|Stack dump|terminate called|Segmentation"
# The checker analyses trees up to 5,000 levels (MaxNestingDepth).
DEEPER = r"nesting deeper than 5000 levels at line 1; this file was not checked"


def first(line: bytes) -> bytes:
    """two_view.py after one line (or more) of another spelling."""
    return line + b"\n" + TWO_VIEW


def lines(text: bytes) -> int:
    return text.count(b"\n")


CASES = []
add = CASES.append

# --- Item 1: deep nesting; a folder keeps the other files' findings --------
DEEP = {
    "sum_3000": b"y = x" + b" + x" * 2999,                 # CPython 3.13 compiles it
    "sum_100000": b"y = x" + b" + x" * 99_999,
    "parens_3000": b"y = " + b"(" * 3000 + b"x" + b")" * 3000,
    "lists_20000": b"y = " + b"[" * 20_000 + b"x" + b"]" * 20_000,
    "calls_20000": b"y = " + b"f(" * 20_000 + b"x" + b")" * 20_000,
    "unary_100000": b"y = " + b"-" * 100_000 + b"x",
    "method_chain_1600": b"y = x" + b".mul_(2)" * 1600,
}
for name, line in DEEP.items():
    analysed = name in ("sum_3000", "parens_3000", "method_chain_1600")
    add(Case(f"deep_{name}", {"deep.py": first(line), "b.py": TWO_VIEW}, ["."],
             exit=1 if analysed else 2, item="31.1",
             findings=[f"b.py:{F}"] + ([f"deep.py:{1 + F}"] if analysed else []),
             stderr=[] if analysed else [DEEPER], not_stderr=[CRASHED], timeout=120))

# --- Item 6: valid Python 3.8-3.14 parses -----------------------------------
NEWER = {
    "template_string": b"x = t'hi {a!r:>{w}}' + rt\"b\"",          # PEP 750, 3.14
    "type_parameter_default": b"def f[T = int, *Ts = *tuple[int], **P = [int]](): pass",  # PEP 696
    "class_type_parameter_default": b"class A[T: (int, str) = int]: pass",
    "type_alias_default": b"type A[T = int] = list[T]",
    "starred_bracket_tuple": b"a = *[], e",
    "starred_return": b"def g():\n    return *[None] * 3, *g_xs",
    "except_star": b"try:\n    pass\nexcept* ValueError:\n    pass",
    "match": b"match c:\n    case [x, *rest] if x:\n        pass\n    case _:\n        pass",
    "nested_fstring_quotes": b"x = f\"{d[\"k\"]!r}\"",                 # PEP 701
}
for name, line in NEWER.items():
    add(Case(f"py3_{name}", {"a.py": first(line)}, ["a.py"], exit=1, item="31.6",
             findings=[f"a.py:{lines(line) + 1 + F}"], not_stderr=[r"cannot parse", CRASHED]))
add(Case("cr_only_line_endings", {"a.py": TWO_VIEW.replace(b"\n", b"\r")}, ["a.py"],
         exit=1, item="31.6", findings=[f"a.py:{F}"], not_stderr=[r"cannot parse"]))
# What it cannot read is not called the user's error.
add(Case("unparsable_is_not_called_a_syntax_error", {"a.py": first(b"x = (1 +")},
         ["a.py"], exit=(1, 2), item="31.6",
         stderr=[r"cannot parse line 1, column \d+ \(a syntax error, or Python newer"],
         not_stderr=[r"^.*: syntax error at"]))

# Every file of the installed torch that CPython compiles parses (two did
# not: a star before a bracket in an unparenthesised tuple).
TORCH = pathlib.Path(sys.prefix)
for site in sorted(TORCH.glob("lib/python3*/site-packages/torch")):
    for relative in ("_higher_order_ops/associative_scan.py",
                     "distributed/elastic/rendezvous/utils.py"):
        source = site / relative
        if source.exists():
            add(Case(f"torch_source_{source.stem}", {"a.py": source.read_bytes()},
                     ["a.py"], exit=(0, 1), item="31.6", not_stderr=[r"cannot parse", CRASHED]))

# --- Item 7: the no_sync fix on CRLF and CR files ---------------------------
for name, ending in (("crlf", b"\r\n"), ("cr", b"\r")):
    source = TWO_VIEW.replace(b"\n", ending)
    fixed = source.replace(b"    out1 = model(input0)" + ending,
                           b"    with model.no_sync():" + ending +
                           b"        out1 = model(input0)" + ending)
    add(Case(f"no_sync_fix_{name}", {"a.py": source},
             ["--fix", "--fix-mode=once-per-backward", "a.py"], exit=0, item="31.7",
             changed={"a.py": fixed}, not_stderr=[r"shares its line"]))
