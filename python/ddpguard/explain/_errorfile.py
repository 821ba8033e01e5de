"""torchrun's error file (TORCHELASTIC_ERROR_FILE).

Written in the format of torch.distributed.elastic's ErrorHandler
(``{"message": {"message": ..., "extraInfo": {"py_callstack": ...,
"timestamp": ...}}}``); torchrun's failure summary shows ``py_callstack``,
which here is the explanation followed by the traceback. The C++ runtime's
record_error (runtime/src/ErrorFile.cpp) writes the same file for C++ ranks.
"""

from __future__ import annotations

import json
import os
import time
import traceback


def write(report: str, exc: BaseException) -> bool:
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return False
    stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    data = {"message": {
        "message": f"{type(exc).__name__}: {exc}",
        "extraInfo": {"py_callstack": report + "\n" + stack,
                      "timestamp": str(int(time.time()))},
    }}
    tmp = f"{path}.ddpguard.{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)  # atomic: torchrun never reads half a file
    except OSError:
        return False
    return True
