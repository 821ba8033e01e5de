"""python -m ddpguard.explain [MODE] [--] script.py args...
python -m ddpguard.explain [MODE] -m module args...

MODE: --armed (default), --after-failure, or --silent-writes [--fingerprint sampled|full]."""

from __future__ import annotations

import gc
import os
import sys
import traceback

from ddpguard import _target

USAGE = ("usage: python -m ddpguard.explain [--armed | --after-failure | --silent-writes "
         "[--fingerprint sampled|full]] [--] script.py [args...]\n"
         "       python -m ddpguard.explain [MODE] -m module [args...]\n")


def main(argv: list[str]) -> int:
    mode = None
    fingerprint = None
    module = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a == "--after-failure":
            mode = "after-failure"
        elif a == "--armed":
            mode = "armed"
        elif a == "--silent-writes":
            mode = "silent-writes"
        elif a.startswith("--fingerprint"):
            value = a.partition("=")[2] if "=" in a else (
                argv[i + 1] if i + 1 < len(argv) else "")
            i += 0 if "=" in a else 1
            if value not in ("sampled", "full"):
                sys.stderr.write(f"ddpguard.explain: --fingerprint takes sampled or full, "
                                 f"not {value!r}\n{USAGE}")
                return 2
            fingerprint = value
        elif a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        elif a == "-m" and i + 1 < len(argv):
            module = argv[i + 1]
            i += 2
            break
        elif a.startswith("-"):
            sys.stderr.write(f"ddpguard.explain: unknown option {a}\n{USAGE}")
            return 2
        else:
            break
        i += 1
    rest = argv[i:]
    if fingerprint is not None and mode != "silent-writes":
        sys.stderr.write(f"ddpguard.explain: --fingerprint needs --silent-writes\n{USAGE}")
        return 2
    if module is None and not rest:
        sys.stderr.write(USAGE)
        return 2
    if module is None and not os.path.isfile(rest[0]):
        sys.stderr.write(f"ddpguard.explain: no such script: {rest[0]}\n")
        return 2

    from ddpguard import explain  # after argument errors, which need no torch

    explain.enable(mode, fingerprint)
    try:
        _target.run(module, rest)
    except Exception as e:
        if getattr(e, "_ddpguard_explained", False) and explain.last_report():
            # The file now carries the whole traceback, as @record would write it.
            from ddpguard.explain import _errorfile
            _errorfile.write(explain.last_report() or "", e)
        # Printed as Python would, then the exception's frames (and the
        # graphs they hold, recorded in other threads too) are freed while
        # the interpreter still runs: on torch 2.15, freeing them at exit
        # aborted one run in five of thread_step.py.
        sys.excepthook(type(e), e, e.__traceback__)
        traceback.clear_frames(e.__traceback__)
        del e
        explain.disable()
        gc.collect()
        return 1
    except BaseException as e:
        if getattr(e, "_ddpguard_explained", False) and explain.last_report():
            from ddpguard.explain import _errorfile
            _errorfile.write(explain.last_report() or "", e)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
