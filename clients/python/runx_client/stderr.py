"""The server's stderr: copied where the caller asked (by default the ``runx_client.serve``
logger: ``runx serve`` writes only warnings and errors there unless told ``-v``), and its last
lines kept, so that a server that exits says why."""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from typing import IO, Any, Deque, Optional, Union

serve_logger = logging.getLogger("runx_client.serve")

#: The most of the server's stderr a :class:`~runx_client.ServerGone` quotes.
TAIL_CHARS = 2000
#: A line of the server's stderr is read at most this many bytes at a time.
LINE_BYTES = 8192

Sink = Union[int, IO[Any], None]


class StderrTail:
    """Reads a server's stderr on a thread of its own until it closes."""

    def __init__(self, stream: IO[bytes], sink: Sink) -> None:
        self._stream = stream
        self._sink = sink
        self._lock = threading.Lock()
        self._lines: Deque[str] = deque()
        self._chars = 0
        self._thread = threading.Thread(target=self._read, name="runx-serve-stderr", daemon=True)
        self._thread.start()

    def text(self, wait: float = 0.0) -> str:
        """The last lines, once the stream has ended or ``wait`` seconds have passed."""
        if wait > 0:
            self._thread.join(wait)
        with self._lock:
            return "\n".join(self._lines).strip()

    def _read(self) -> None:
        try:
            for raw in iter(lambda: self._stream.readline(LINE_BYTES), b""):
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                self._keep(line)
                self._copy(raw, line)
        except (OSError, ValueError):  # closed under us: the client is closing
            pass

    def _keep(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
            self._chars += len(line) + 1
            while self._chars > TAIL_CHARS and len(self._lines) > 1:
                self._chars -= len(self._lines.popleft()) + 1

    def _copy(self, raw: bytes, line: str) -> None:
        sink = self._sink
        try:
            if sink is None:
                if line:
                    level = logging.ERROR if " ERROR " in line else logging.WARNING
                    serve_logger.log(level, "%s", line)
            elif isinstance(sink, int):
                if sink >= 0:
                    os.write(sink, raw)
                # subprocess.DEVNULL and the other negative constants: nowhere
            elif "b" in getattr(sink, "mode", ""):
                sink.write(raw)
                sink.flush()
            else:
                sink.write(line + "\n")
                sink.flush()
        except (OSError, ValueError):
            pass


def gone_message(returncode: Optional[int], tail: str) -> str:
    """What a :class:`~runx_client.ServerGone` says: how the server ended, and its last words."""
    if returncode is None:
        how = "runx serve closed its output"
    elif returncode < 0:
        how = f"runx serve was killed by signal {-returncode}"
    else:
        how = f"runx serve exited with code {returncode}"
    if not tail:
        return how
    return f"{how}: {tail[-TAIL_CHARS:]}"

