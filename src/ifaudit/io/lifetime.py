"""How an `ifaudit` process lives and ends.

Worker processes end with their parent: a killed `ifaudit grade` leaves nothing running. A forked
pool worker whose parent is SIGKILLed is not told; it would grade its chunk to the end and then
hang on a queue nobody reads. On Linux the kernel delivers SIGKILL to the worker when its parent
dies (prctl PR_SET_PDEATHSIG); everywhere, a watcher thread polls the parent pid and exits the
worker when it changes (the worker was re-parented), within POLL_SECONDS.

A grading process builds the tables it keeps to its end out of the cyclic collector's sight
(built_to_last).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
POLL_SECONDS = 0.2


def _ask_kernel() -> None:
    """Have Linux send SIGKILL to this process when the thread that forked it ends."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # here: the processes that are no pool's workers do without it
    import ctypes.util

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


@contextmanager
def built_to_last() -> Iterator[None]:
    """What is built inside lives until the process ends: a grader and its tables (langdetect's
    55 profiles, which the canary's first language check loads, are 87,000 lists of 4.8 million
    numbers; NLTK's Punkt parameters). It is built with Python's cyclic collector off, then frozen
    out of the collector's sight (gc.freeze).

    Every full collection traverses every tracked object: while those tables were built the
    collector ran over them again and again and found nothing (they hold no garbage cycles), and
    once more at exit. That was a third of a grading process's CPU: 1.18 s against 0.81 s for
    the default run's pass (bench/README.md). What is made after the block is collected as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
