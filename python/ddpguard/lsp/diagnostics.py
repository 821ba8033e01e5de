"""ddpguard's JSON report (``ddpguard --format=json``) as LSP diagnostics and
quick fixes. Pure: no process, no I/O, so that it is unit-tested alone.

The report gives places as byte offsets into the UTF-8 source that was
checked; they become LSP positions in the client's encoding (UTF-16 unless
the client negotiated another). A finding is a point (the forward call); its
range covers the name there, as an editor underlines it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

SOURCE = "ddpguard"

# LSP's line terminators (not str.splitlines's, which has more).
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


class Positions:
    """Byte offsets of one UTF-8 source as LSP positions."""

    def __init__(self, text: str, codec: PositionCodec) -> None:
        self._bytes = text.encode("utf-8")
        self._codec = codec
        self._starts = [0] + [m.end() for m in _LINE_BREAK.finditer(self._bytes)]

    def position(self, offset: int) -> types.Position:
        offset = max(0, min(offset, len(self._bytes)))
        line = bisect.bisect_right(self._starts, offset) - 1
        prefix = self._bytes[self._starts[line]:offset].decode("utf-8", "replace")
        return types.Position(line=line, character=self._codec.client_num_units(prefix))

    def name_range(self, offset: int) -> types.Range:
        """The identifier starting at offset (empty when there is none)."""
        rest = self._bytes[offset:offset + 256].decode("utf-8", "ignore")
        name = re.match(r"\w*", rest).group(0)
        end = offset + len(name.encode("utf-8"))
        return types.Range(start=self.position(offset), end=self.position(end))

    def span(self, offset: int, length: int) -> types.Range:
        return types.Range(start=self.position(offset),
                           end=self.position(offset + length))

    def character_range(self, offset: int) -> types.Range:
        """The character at offset; empty at the end of a line."""
        char = self._bytes[offset:offset + 4].decode("utf-8", "ignore")[:1]
        length = 0 if char in ("", "\r", "\n") else len(char.encode("utf-8"))
        return self.span(offset, length)


@dataclass
class QuickFix:
    """A finding's fix as a code action on its diagnostic."""
    title: str
    diagnostic: types.Diagnostic
    edits: list[types.TextEdit]
    # The report's fixApplicability: an unsafe fix (one that changes
    # behaviour) is offered but not preferred, as ruff does.
    preferred: bool = True


@dataclass
class Conversion:
    diagnostics: list[types.Diagnostic] = field(default_factory=list)
    fixes: list[QuickFix] = field(default_factory=list)
    # Problems with no place in the document (an interpreter without torch,
    # a rule file that does not load): for the user, not the gutter.
    messages: list[str] = field(default_factory=list)


def _fix_title(finding: dict[str, Any]) -> str:
    """The report's own title of the fix (its fixTitle field), named."""
    if title := finding.get("fixTitle"):
        return f"{title} (ddpguard)"
    return "Apply ddpguard's fix"


def convert(report: dict[str, Any], text: str, checked_file: str, uri: str,
            codec: PositionCodec, related_information: bool = True) -> Conversion:
    """The diagnostics and fixes of report, ddpguard's JSON report on text
    read from standard input as checked_file (the absolute path it printed),
    the document uri. Without related_information (a client that does not
    show it) the notes are appended to the message, as clangd does."""
    positions = Positions(text, codec)
    result = Conversion()

    def in_document(place: dict[str, Any]) -> bool:
        return place.get("file") == checked_file

    for finding in report.get("findings", []):
        if not in_document(finding):
            continue
        notes = [n for n in finding.get("notes", []) if in_document(n)]
        message = finding["message"]
        related = None
        if related_information:
            related = [types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=positions.name_range(n["offset"])),
                message=n["message"]) for n in notes]
        elif notes:
            message += "\n\n" + "\n".join(
                f'{n["line"]}:{n["column"]}: note: {n["message"]}' for n in notes)
        diagnostic = types.Diagnostic(
            range=positions.name_range(finding["offset"]),
            message=message,
            severity=types.DiagnosticSeverity.Warning,
            code=finding.get("check"),
            source=SOURCE,
            related_information=related or None)
        result.diagnostics.append(diagnostic)
        edits = [types.TextEdit(range=positions.span(r["offset"], r["length"]),
                                new_text=r["replacement"])
                 for r in finding.get("fix", []) if in_document(r)]
        if edits:
            result.fixes.append(QuickFix(
                _fix_title(finding), diagnostic, edits,
                preferred=finding.get("fixApplicability") != "unsafe"))

    for error in report.get("errors", []):
        if "offset" in error and in_document(error):
            result.diagnostics.append(types.Diagnostic(
                range=positions.character_range(error["offset"]),
                message=error["message"],
                severity=types.DiagnosticSeverity.Error,
                source=SOURCE))
        else:
            result.messages.append(f'{error.get("file", "")}: {error.get("message", "")}')
    return result
