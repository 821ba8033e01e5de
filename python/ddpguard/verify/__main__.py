"""python -m ddpguard.verify [--] script.py args...   (under torchrun, one per rank)
python -m ddpguard.verify -m module args..."""

from __future__ import annotations

import os
import runpy
import sys

USAGE = ("usage: python -m ddpguard.verify [--] script.py [args...]\n"
         "       python -m ddpguard.verify -m module [args...]\n")


def main(argv: list[str]) -> int:
    module = None
    if argv[:1] == ["--"]:
        argv = argv[1:]
    elif argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    elif argv[:1] == ["-m"] and len(argv) > 1:
        module, argv = argv[1], argv[2:]
    elif argv[:1] and argv[0].startswith("-"):
        sys.stderr.write(f"ddpguard.verify: unknown option {argv[0]}\n{USAGE}")
        return 2
    if module is None and not argv:
        sys.stderr.write(USAGE)
        return 2
    if module is None and not os.path.isfile(argv[0]):
        sys.stderr.write(f"ddpguard.verify: no such script: {argv[0]}\n")
        return 2

    from ddpguard import verify

    verify.enable()
    try:
        if module is not None:
            sys.argv = [module] + argv
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        verify.finish(None if e.code in (None, 0) else e)
        raise
    except BaseException as e:
        verify.finish(e)
        raise
    verify.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
