"""ddpguard-lsp's pure part: ddpguard's JSON report as LSP diagnostics and
quick fixes (python/ddpguard/lsp/diagnostics.py). The server over stdio and
in Neovim is tested in lit (test/lit/lsp/)."""

import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from ddpguard.lsp.diagnostics import Positions, convert  # noqa: E402

FILE = "/work/train.py"
URI = "file:///work/train.py"
CHECK = "ddp-multiple-forward-before-backward"
UTF16 = PositionCodec(types.PositionEncodingKind.Utf16)

SOURCE = """model = DDP(net)
out1 = model(a)
out2 = model(b)
(out1 + out2).sum().backward()
"""


def offset(text: str, needle: str, nth: int = 0) -> int:
    """The byte offset of the nth needle in text."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    return len(text[:at].encode("utf-8"))


def note(text: str, needle: str, message: str, nth: int = 0, kind: str = "place") -> dict:
    return {"file": FILE, "offset": offset(text, needle, nth), "message": message,
            "line": 0, "column": 0, "fix": [], "kind": kind}


def report(text: str = SOURCE, **extra) -> dict:
    """A report as ddpguard --format=json writes it for two forwards."""
    construction = offset(text, "DDP(net") + len("DDP(net")
    return {"version": 1, "errors": [], "suppressedInHeaders": 0, "findings": [{
        "check": CHECK, "file": FILE, "offset": offset(text, "model(", 1),
        "line": 3, "column": 8,
        "message": "forward call on DDP-wrapped 'model' before the backward",
        "notes": [note(text, "model(", "earlier forward on 'model' is here"),
                  note(text, "(out1", "the backward that fails is here"),
                  note(text, "DDP", "'model' is constructed here"),
                  note(text, "model(", "the fix sets 'broadcast_buffers' to false, "
                       "which changes behaviour", 1, kind="fix-effect")],
        "fix": [{"file": FILE, "offset": construction, "length": 0,
                 "replacement": ", broadcast_buffers=False"}],
        "fixTitle": "Set broadcast_buffers=False at the DDP construction",
        "fixApplicability": "unsafe"}],
        **extra}


def position(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def span(line: int, start: int, end: int) -> types.Range:
    return types.Range(start=position(line, start), end=position(line, end))


def test_finding_is_a_warning_on_the_second_forward_with_its_notes():
    result = convert(report(), SOURCE, FILE, URI, UTF16)
    [diagnostic] = result.diagnostics
    assert diagnostic.range == span(2, 7, 12)
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert (diagnostic.code, diagnostic.source) == (CHECK, "ddpguard")
    assert diagnostic.message == "forward call on DDP-wrapped 'model' before the backward"
    related = [(r.location.uri, r.location.range, r.message)
               for r in diagnostic.related_information]
    assert related[:3] == [
        (URI, span(1, 7, 12), "earlier forward on 'model' is here"),
        (URI, span(3, 0, 0), "the backward that fails is here"),
        (URI, span(0, 8, 11), "'model' is constructed here")]
    assert result.messages == []


def test_fix_is_a_quick_fix_that_sets_the_keyword():
    [fix] = convert(report(), SOURCE, FILE, URI, UTF16).fixes
    assert fix.title == "Set broadcast_buffers=False at the DDP construction (ddpguard)"
    assert fix.edits == [types.TextEdit(range=span(0, 15, 15),
                                        new_text=", broadcast_buffers=False")]


def test_an_unsafe_fix_is_offered_but_not_preferred_and_a_safe_one_is():
    [unsafe] = convert(report(), SOURCE, FILE, URI, UTF16).fixes
    assert not unsafe.preferred
    data = report()
    data["findings"][0]["fixApplicability"] = "safe"
    [safe] = convert(data, SOURCE, FILE, URI, UTF16).fixes
    assert safe.preferred


def test_without_related_information_the_notes_join_the_message():
    data = report()
    for n, (line, column) in zip(data["findings"][0]["notes"], [(2, 8), (4, 1)]):
        n.update(line=line, column=column)
    [diagnostic] = convert(data, SOURCE, FILE, URI, UTF16,
                           related_information=False).diagnostics
    assert diagnostic.related_information is None
    assert diagnostic.message.splitlines()[2:4] == [
        "2:8: note: earlier forward on 'model' is here",
        "4:1: note: the backward that fails is here"]


def test_syntax_error_is_an_error_where_the_cli_puts_it():
    text = SOURCE + "y = x.\n"
    data = report(text, errors=[{"file": FILE, "offset": offset(text, "x."), "line": 5,
                                 "column": 5, "message": "syntax error at line 5, column 5"}])
    result = convert(data, text, FILE, URI, UTF16)
    error = result.diagnostics[-1]
    assert (error.range, error.severity, error.message) == (
        span(4, 4, 5), types.DiagnosticSeverity.Error, "syntax error at line 5, column 5")
    assert len(result.fixes) == 1


def test_syntax_error_at_the_end_of_a_line_is_an_empty_range():
    text = "if y\n"
    data = {"findings": [], "errors": [{"file": FILE, "offset": 4, "message": "syntax error"}]}
    [error] = convert(data, text, FILE, URI, UTF16).diagnostics
    assert error.range == span(0, 4, 4)


def test_errors_without_a_place_are_messages():
    data = report(errors=[{"file": "/bin/false", "message": "--python: could not read"}])
    result = convert(data, SOURCE, FILE, URI, UTF16)
    assert result.messages == ["/bin/false: --python: could not read"]
    assert len(result.diagnostics) == 1


def test_other_files_places_are_left_out():
    data = report()
    data["findings"][0]["notes"][0]["file"] = "/elsewhere.py"
    [diagnostic] = convert(data, SOURCE, FILE, URI, UTF16).diagnostics
    assert "earlier forward" not in [r.message for r in diagnostic.related_information]
    data["findings"][0]["file"] = "/elsewhere.py"
    assert convert(data, SOURCE, FILE, URI, UTF16).diagnostics == []


@pytest.mark.parametrize("encoding, character", [
    (types.PositionEncodingKind.Utf8, 13), (types.PositionEncodingKind.Utf16, 10),
    (types.PositionEncodingKind.Utf32, 9)])
def test_positions_count_the_clients_code_units(encoding, character):
    text = 'é = "😋"; model(a)\n'
    positions = Positions(text, PositionCodec(encoding))
    assert positions.position(offset(text, "model")) == position(0, character)


def test_crlf_and_cr_end_lines():
    text = "a = 1\r\nb = 2\rmodel(x)\n"
    positions = Positions(text, UTF16)
    assert positions.name_range(offset(text, "model")) == span(2, 0, 5)


def test_fix_title_without_a_title_in_the_report():
    data = report()
    del data["findings"][0]["fixTitle"]
    [fix] = convert(data, SOURCE, FILE, URI, UTF16).fixes
    assert fix.title == "Apply ddpguard's fix"


def test_fix_title_of_the_out_of_place_fix():
    data = report()
    data["findings"][0]["check"] = "inplace-write-before-backward"
    data["findings"][0]["fixTitle"] = "Write it out of place"
    [fix] = convert(data, SOURCE, FILE, URI, UTF16).fixes
    assert fix.title == "Write it out of place (ddpguard)"
