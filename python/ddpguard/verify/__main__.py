"""python -m ddpguard.verify [--] script.py args...   (under torchrun, one per rank;
   the ddpguard-verify console script is the same: torchrun --no-python ddpguard-verify ...)
python -m ddpguard.verify -m module args..."""

from __future__ import annotations

import os
import sys

from ddpguard import _target

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
        _target.run(module, argv)
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
