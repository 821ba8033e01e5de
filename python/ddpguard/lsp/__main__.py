"""ddpguard-lsp [--ddpguard PATH] [--debounce SECONDS] [-- DDPGUARD-ARGS...]

A language server over standard input and output. DDPGUARD-ARGS are given to
every ddpguard run (--torch-version, --python, --rules)."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
from pathlib import Path

# ddpguard-lsp chooses these itself for every run.
_OWN_OPTIONS = ("--format", "--output-format", "--stdin-filename", "--fix",
                "--diff", "--diff-base", "--line-filter", "--export-fixes")


def find_ddpguard(option: str | None) -> str | None:
    """The ddpguard executable: --ddpguard, else $DDPGUARD, else on PATH,
    else next to this server's script (both installed in one bin/)."""
    if option:
        return option
    if os.environ.get("DDPGUARD"):
        return os.environ["DDPGUARD"]
    if found := shutil.which("ddpguard"):
        return found
    beside = Path(sys.argv[0]).absolute().parent / "ddpguard"
    return str(beside) if os.access(beside, os.X_OK) else None


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ddpguard-lsp",
        description="ddpguard's Python checker as a language server (stdio).")
    parser.add_argument("--ddpguard", metavar="PATH",
                        help="the ddpguard executable (default: $DDPGUARD, "
                             "else ddpguard on PATH, else next to ddpguard-lsp)")
    parser.add_argument("--debounce", type=float, default=0.25, metavar="SECONDS",
                        help="wait this long after an edit for the next one "
                             "before checking (default: 0.25)")
    parser.add_argument("--log-level", default="WARNING",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="what the server logs to standard error")
    # What many clients pass to a server they run over standard I/O (it is
    # the only transport here).
    parser.add_argument("--stdio", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("ddpguard_args", nargs="*", metavar="DDPGUARD-ARGS",
                        help="after --: arguments for every ddpguard run, "
                             "such as --torch-version 2.11.0 or --python PATH")
    args = parser.parse_args(argv)
    if args.debounce < 0:
        parser.error("--debounce must not be negative")
    for arg in args.ddpguard_args:
        if arg.split("=")[0] in _OWN_OPTIONS:
            parser.error(f"{arg.split('=')[0]} is chosen by ddpguard-lsp itself")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="ddpguard-lsp: %(levelname)s: %(message)s")
    try:
        from ddpguard.lsp.server import Settings, make_server
    except ImportError as error:
        sys.stderr.write(f"ddpguard-lsp: {error}: install pygls "
                         "(pip install 'ddpguard[lsp]')\n")
        return 2
    settings = Settings(ddpguard=find_ddpguard(args.ddpguard),
                        args=args.ddpguard_args, debounce=args.debounce)
    make_server(settings).start_io()
    return 0


if __name__ == "__main__":
    sys.exit(main())
