"""Running a check in a forked child, as a pre-forking server's worker runs."""

from __future__ import annotations

import faulthandler
import os
import signal
from collections.abc import Callable


def in_forked_child(check: Callable[[], bool], *, seconds: int = 20) -> bool:
    """Whether ``check()`` returns true in a forked child within ``seconds``. A child that raises fails; one
    that hangs is killed, after writing every thread's stack to stderr so the failure shows where."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            faulthandler.dump_traceback_later(max(1, seconds - 5))
            signal.alarm(seconds)
            code = 0 if check() else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
