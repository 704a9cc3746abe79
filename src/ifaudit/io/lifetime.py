"""Worker processes end with their parent: a killed `ifaudit grade` leaves nothing running.

A forked pool worker whose parent is SIGKILLed is not told; it would grade its chunk to the end
and then hang on a queue nobody reads. On Linux the kernel delivers SIGKILL to the worker when
its parent dies (prctl PR_SET_PDEATHSIG); everywhere, a watcher thread polls the parent pid and
exits the worker when it changes (the worker was re-parented), within POLL_SECONDS.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
POLL_SECONDS = 0.2


def _ask_kernel() -> None:
    """Have Linux send SIGKILL to this process when the thread that forked it ends."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_SECONDS)
    os._exit(1)


def die_with_parent(parent: int) -> None:
    """Pool initializer: end this worker as soon as `parent` (the pid that forked it) is gone.

    The parent may already have died between fork and this call; the watcher sees that at once."""
    _ask_kernel()
    threading.Thread(target=_watch, args=(parent,), name="parent-watch", daemon=True).start()
