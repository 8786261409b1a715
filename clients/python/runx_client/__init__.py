"""A client for ``runx serve``: run skill steps on a warm runx from Python.

``runx serve`` keeps one worker pool warm and speaks JSON-RPC 2.0 over its stdin and stdout,
one object per line. :class:`Client` starts it, sends requests from any number of threads,
matches answers (which come out of order) to their requests, and stops it when the ``with``
block ends; :class:`AsyncClient` does the same for asyncio. Standard library only.

>>> from runx_client import Client, RunxError
>>> with Client("runx") as runx:                                      # doctest: +SKIP
...     step = runx.run("skill-fixtures/hello", {"name": "Ada"}, env={"REGION": "eu"})
...     step.result["greeting"], step.outcome, step.receipt_id[:7]
('Hello, Ada.', 'completed', 'sha256:')

:meth:`Client.submit` returns a :class:`Step`, a ``concurrent.futures.Future``: ``wait`` and
``as_completed`` take steps. At most the server's ``pool_size + queue`` steps are in the
server at once; the rest wait in the client, so a burst of submissions is never refused busy.

A result is runx's ``runx.skill_run.v1`` envelope, as ``runx skill --json`` prints it: a step
succeeded when its ``outcome`` is ``"completed"`` (:attr:`StepResult.ok`); its ``status`` is
``"sealed"`` whenever its receipt was written, a failed run's too. A step that ran and failed
raises :class:`RunxError` carrying runx's failure ``kind`` and ``code`` (``check=False``
returns the failed :class:`StepResult` instead). A request that could
not run at all raises :class:`ServeError`; a server that exited, :class:`ServerGone`, with what
it wrote to stderr. A progress callback that raised makes a completed step raise
:class:`CallbackError`. Every error pickles.
"""

from __future__ import annotations

from .aio import AsyncClient, AsyncStep
from .client import Client, Step
from .errors import (
    BUSY,
    PACKAGE_FAILURE,
    BusyError,
    CallbackError,
    RunxError,
    ServeError,
    ServerGone,
)
from .results import SKILL_RUN_SCHEMA, Progress, StepResult

__version__ = "0.3.0"

__all__ = [
    "BUSY",
    "PACKAGE_FAILURE",
    "SKILL_RUN_SCHEMA",
    "AsyncClient",
    "AsyncStep",
    "BusyError",
    "CallbackError",
    "Client",
    "Progress",
    "RunxError",
    "ServeError",
    "ServerGone",
    "Step",
    "StepResult",
    "__version__",
]
