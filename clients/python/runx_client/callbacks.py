"""Where callers' code runs: never on the thread that reads the server's answers.

Each step has a :class:`Chain`: its progress callbacks, its completion (when it has a
progress callback, so that every page is reported before its result) and its done callbacks
run one after another, in order, on a small pool of threads. Steps do not wait for each other:
a callback that sleeps holds its own step's chain and one pool thread, nothing else.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Deque

logger = logging.getLogger("runx_client")

#: Threads of a client's callback pool, by default.
CALLBACK_THREADS = 4


class Chain:
    """Work for one step, run in order on one pool thread at a time."""

    __slots__ = ("lock", "items", "busy")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: Deque[Callable[[], None]] = deque()
        self.busy = False


class Callbacks:
    """The pool the chains run on; its threads start when there is work."""

    def __init__(self, threads: int = CALLBACK_THREADS) -> None:
        self._pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="runx-callback")

    def post(self, chain: Chain, work: Callable[[], None]) -> None:
        """Runs ``work`` after what ``chain`` already holds. After :meth:`close`, the caller's
        thread runs it."""
        with chain.lock:
            chain.items.append(work)
            if chain.busy:
                return
            chain.busy = True
        try:
            self._pool.submit(self._drain, chain)
        except RuntimeError:  # the pool was shut down: nobody else will run it
            self._drain(chain)

    def close(self) -> None:
        """Lets the threads end once their chains are done; does not wait for them."""
        self._pool.shutdown(wait=False)

    @staticmethod
    def _drain(chain: Chain) -> None:
        while True:
            with chain.lock:
                if not chain.items:
                    chain.busy = False
                    return
                work = chain.items.popleft()
            try:
                work()
            except BaseException:  # a chain must go on, whatever its work raised
                logger.exception("a runx_client callback raised")
