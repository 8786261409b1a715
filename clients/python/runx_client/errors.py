"""The errors of the client. Every one pickles (its constructor's arguments travel, not its
formatted message), so a step run in a ``ProcessPoolExecutor`` or a Dask worker raises the
same error, with the same attributes, in the process that waits for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

if TYPE_CHECKING:
    from .results import StepResult

RequestId = Union[int, str]

#: The JSON-RPC error code of a request refused because the server is full.
BUSY = -32001
#: The JSON-RPC error code of ``inspect`` on a package that cannot load.
PACKAGE_FAILURE = -32002


class ServeError(Exception):
    """A JSON-RPC error: the request could not run at all (malformed, unknown method, bad
    params, busy)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...], Dict[str, Any]]:
        return (type(self), (self.code, self.message, self.data), dict(self.__dict__))


class BusyError(ServeError):
    """Every step slot and the queue were taken (-32001). A :class:`~runx_client.Client` waits
    for a slot instead of raising this, unless it was made with ``backpressure=False``."""


class ServerGone(ServeError):
    """The server exited (or its output closed) before it answered. ``returncode`` is its exit
    code (negative: the signal that killed it; ``None``: it had not exited), ``stderr`` the
    last lines it wrote there, which say why (a bad ``--engine``, a key it could not read)."""

    def __init__(
        self, message: str, returncode: Optional[int] = None, stderr: str = ""
    ) -> None:
        super().__init__(0, message)
        self.returncode = returncode
        self.stderr = stderr

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...], Dict[str, Any]]:
        return (type(self), (self.message, self.returncode, self.stderr), dict(self.__dict__))


class RunxError(Exception):
    """A step that ran and failed, or a package that cannot be loaded: runx's failure
    ``kind`` (``input``, ``resource_limit``, ``interrupted``, ...), ``code`` and message.
    ``result`` is the failed :class:`~runx_client.StepResult` (with its receipt), when the
    step ran (its ``outcome`` is ``"failed"`` or ``"blocked"``; its ``status`` is ``"sealed"``
    when the receipt was written, as runx reports a failed run it sealed)."""

    def __init__(
        self, kind: str, code: str, message: str, result: Optional["StepResult"] = None
    ) -> None:
        super().__init__(f"{kind}/{code}: {message}")
        self.kind = kind
        self.code = code
        self.message = message
        self.result = result

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...], Dict[str, Any]]:
        args = (self.kind, self.code, self.message, self.result)
        return (type(self), args, dict(self.__dict__))

    @property
    def receipt(self) -> Optional[str]:
        """The failed run's receipt file (``receipt_path``), when it was written."""
        return self.result.receipt_path if self.result is not None else None

    @property
    def receipt_id(self) -> Optional[str]:
        """The failed run's receipt id (``sha256:...``), when it was written."""
        return self.result.receipt_id if self.result is not None else None

    @property
    def outcome(self) -> Optional[str]:
        """``"failed"``, or ``"blocked"`` when the inputs were refused before the run; ``None``
        when the step did not run (a package that cannot be loaded)."""
        return self.result.outcome if self.result is not None else None


class CallbackError(Exception):
    """The step ran and completed, but its progress callback raised. The callback's exception is
    ``__cause__`` (and :attr:`Step.callback_error <runx_client.Step.callback_error>`); the
    step's result is ``result``. A pickled ``CallbackError`` keeps the message, which names
    the callback's exception, but not the exception itself."""

    def __init__(self, message: str, step_id: RequestId, result: "StepResult") -> None:
        super().__init__(message)
        self.message = message
        self.step_id = step_id
        self.result = result

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...], Dict[str, Any]]:
        return (type(self), (self.message, self.step_id, self.result), dict(self.__dict__))


def error_of(error: Dict[str, Any]) -> Exception:
    """The exception of a JSON-RPC error object."""
    code = int(error.get("code", 0))
    message = str(error.get("message", ""))
    data = error.get("data")
    if code == BUSY:
        return BusyError(code, message, data)
    if code == PACKAGE_FAILURE and isinstance(data, dict):
        return RunxError(str(data.get("kind")), str(data.get("code")), str(data.get("message")))
    return ServeError(code, message, data)
