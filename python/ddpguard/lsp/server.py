"""The language server: runs ``ddpguard --format=json --stdin-filename=PATH``
on each Python document as it is opened, edited (debounced) and saved,
publishes the findings as diagnostics and offers each finding's fix as a
quick fix."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import dataclass, field

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from ddpguard.lsp import __version__
from ddpguard.lsp.diagnostics import Conversion, QuickFix, convert

log = logging.getLogger(__name__)

# ddpguard's exit statuses that come with a report: clean, findings, errors.
_REPORTED = (0, 1, 2)


@dataclass
class Settings:
    # The ddpguard executable; None when none was found (see __main__).
    ddpguard: str | None
    # Arguments for every run: --torch-version, --python, --rules.
    args: list[str] = field(default_factory=list)
    # Seconds an edit waits for the next one before the document is checked.
    debounce: float = 0.25


class DdpguardServer(LanguageServer):
    def __init__(self, settings: Settings) -> None:
        super().__init__("ddpguard-lsp", __version__)
        self.settings = settings
        self.checks: dict[str, asyncio.Task] = {}
        self.fixes: dict[str, list[QuickFix]] = {}
        # A problem is shown once a session, and logged each time.
        self.shown: set[str] = set()

    def problem(self, message: str, kind: types.MessageType) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=message))
        if message not in self.shown:
            self.shown.add(message)
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def schedule(self, uri: str, delay: float) -> None:
        """Checks the document after delay seconds, in place of any check of
        it that is waiting or running."""
        if (pending := self.checks.pop(uri, None)) is not None:
            pending.cancel()

        async def later() -> None:
            await asyncio.sleep(delay)
            try:
                await self.check(uri)
            except Exception as error:  # A task's own error is otherwise lost.
                log.exception("checking %s", uri)
                self.problem(f"ddpguard-lsp: internal error checking {uri}: {error!r}",
                             types.MessageType.Error)
        self.checks[uri] = asyncio.get_running_loop().create_task(later())

    def forget(self, uri: str) -> None:
        if (pending := self.checks.pop(uri, None)) is not None:
            pending.cancel()
        self.fixes.pop(uri, None)
        self.publish(uri, None, [])

    def publish(self, uri: str, version: int | None,
                diagnostics: list[types.Diagnostic]) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=diagnostics))

    async def run_ddpguard(self, stdin_name: str, text: str) -> dict | None:
        """ddpguard's JSON report on text, or None (the problem reported)."""
        executable = self.settings.ddpguard
        if executable is None:
            self.problem("ddpguard-lsp: no ddpguard executable found (tried "
                         "--ddpguard, $DDPGUARD, PATH and the folder of "
                         "ddpguard-lsp); install ddpguard or pass --ddpguard PATH",
                         types.MessageType.Error)
            return None
        command = [executable, "--format=json", f"--stdin-filename={stdin_name}",
                   *self.settings.args]
        try:
            process = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except OSError as error:
            self.problem(f"ddpguard-lsp: cannot run {executable}: {error.strerror}",
                         types.MessageType.Error)
            return None
        try:
            out, err = await process.communicate(text.encode("utf-8"))
        except asyncio.CancelledError:
            # An edit came: this result is stale.
            process.kill()
            await process.wait()
            raise
        stderr = err.decode("utf-8", "replace").strip()
        try:
            report = json.loads(out) if process.returncode in _REPORTED else None
        except ValueError:
            report = None
        if not isinstance(report, dict):
            self.problem(f"ddpguard-lsp: {' '.join(command)} failed (exit status "
                         f"{process.returncode}): {stderr or 'no report'}",
                         types.MessageType.Error)
            return None
        return report

    async def check(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        text, version = document.source, document.version
        path = to_fs_path(uri) or document.path
        # ddpguard reads Python as a .py file: a script without the suffix,
        # or an unsaved buffer, is checked under such a name beside it.
        stdin_name = os.path.abspath(path if path.endswith(".py") else path + ".py")
        report = await self.run_ddpguard(stdin_name, text)
        if report is None:
            # No stale findings stay on a text they were not found in.
            self.fixes.pop(uri, None)
            self.publish(uri, version, [])
            return
        capabilities = self.client_capabilities.text_document
        related = bool(capabilities and capabilities.publish_diagnostics
                       and capabilities.publish_diagnostics.related_information)
        result: Conversion = convert(report, text, stdin_name, uri,
                                     self.workspace.position_codec, related)
        for message in result.messages:
            self.problem(f"ddpguard: {message}", types.MessageType.Warning)
        self.fixes[uri] = result.fixes
        self.publish(uri, version, result.diagnostics)

    def code_actions(self, uri: str, requested: types.Range) -> list[types.CodeAction]:
        def overlaps(a: types.Range, b: types.Range) -> bool:
            return ((a.start.line, a.start.character) <= (b.end.line, b.end.character)
                    and (b.start.line, b.start.character) <= (a.end.line, a.end.character))
        return [types.CodeAction(
                    title=fix.title, kind=types.CodeActionKind.QuickFix,
                    diagnostics=[fix.diagnostic], is_preferred=fix.preferred,
                    edit=types.WorkspaceEdit(changes={uri: fix.edits}))
                for fix in self.fixes.get(uri, [])
                if overlaps(fix.diagnostic.range, requested)]


def make_server(settings: Settings) -> DdpguardServer:
    server = DdpguardServer(settings)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DdpguardServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DdpguardServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.settings.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: DdpguardServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DdpguardServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls: DdpguardServer,
                    params: types.CodeActionParams) -> list[types.CodeAction]:
        only = params.context.only
        # Kinds are hierarchical: "quickfix" and "" both take ours.
        if only and not any(types.CodeActionKind.QuickFix.startswith(kind)
                            for kind in only):
            return []
        return ls.code_actions(params.text_document.uri, params.range)

    return server
