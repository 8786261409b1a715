"""A client for ``runx serve``: run skill steps on a warm runx from Python.

``runx serve`` keeps one worker pool warm and speaks JSON-RPC 2.0 over its stdin and stdout,
one object per line. :class:`Client` starts it, sends requests from any number of threads,
matches answers (which come out of order) to their requests, and stops it when the ``with``
block ends. Standard library only.

>>> from runx_client import Client, RunxError
>>> with Client("runx") as runx:                                      # doctest: +SKIP
...     step = runx.run("skill-fixtures/hello", {"name": "Ada"}, env={"REGION": "eu"})
...     step.output["greeting"]
'Hello, Ada.'

A step that ran and failed raises :class:`RunxError` carrying runx's failure ``kind`` and
``code`` (``run(..., check=False)`` returns the failed :class:`StepResult` instead). A request
that could not run at all raises :class:`ServeError` (:class:`BusyError` when every slot and
the queue are taken).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Union

__all__ = [
    "BUSY",
    "BusyError",
    "Client",
    "Progress",
    "RunxError",
    "ServeError",
    "ServerGone",
    "Step",
    "StepResult",
]

JsonObject = Dict[str, Any]
RequestId = Union[int, str]
PathLike = Union[str, "os.PathLike[str]"]

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


class BusyError(ServeError):
    """Every step slot and the queue were taken (-32001); retry later."""


class ServerGone(ServeError):
    """The server exited (or its output closed) before it answered."""

    def __init__(self, message: str) -> None:
        super().__init__(0, message)


class RunxError(Exception):
    """A step that ran and failed, or a package that cannot be loaded: runx's failure
    ``kind`` (``input``, ``resource_limit``, ``interrupted``, ...), ``code`` and message."""

    def __init__(
        self, kind: str, code: str, message: str, result: Optional["StepResult"] = None
    ) -> None:
        super().__init__(f"{kind}/{code}: {message}")
        self.kind = kind
        self.code = code
        self.message = message
        self.result = result

    @property
    def receipt(self) -> Optional[str]:
        """The failed run's receipt, when it was written."""
        return self.result.receipt if self.result is not None else None


@dataclass(frozen=True)
class Progress:
    """Where a paged run stands after a page."""

    id: RequestId
    page_index: int
    bytes: int
    total_bytes: int


@dataclass(frozen=True)
class StepResult:
    """The object ``runx skill --json`` prints for the same run."""

    status: str
    skill: Optional[str]
    runner: Optional[str]
    output: Any
    receipt: Optional[str]
    error: Optional[JsonObject]
    #: The ``{"level", "message"}`` lines a javascript runner logged (as printed: the full
    #: counts are in ``console_counts``).
    console: List[JsonObject] = field(default_factory=list)
    #: ``line_count``, ``bytes``, ``printed_bytes`` and ``dropped_bytes`` of the console.
    console_counts: JsonObject = field(default_factory=dict)
    #: A cli-tool's stderr: ``{"text", "total_bytes", "printed_bytes", "truncated", "sha256"}``;
    #: ``None`` for a javascript runner.
    stderr: Optional[JsonObject] = None
    #: The whole object as the server sent it.
    raw: JsonObject = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the run sealed."""
        return self.status == "sealed"

    @classmethod
    def from_json(cls, obj: JsonObject) -> "StepResult":
        return cls(
            status=obj["status"],
            skill=obj.get("skill"),
            runner=obj.get("runner"),
            output=obj.get("output"),
            receipt=obj.get("receipt"),
            error=obj.get("error"),
            console=list((obj.get("console") or {}).get("lines") or []),
            console_counts={
                k: v for k, v in (obj.get("console") or {}).items() if k != "lines"
            },
            stderr=obj.get("stderr"),
            raw=dict(obj),
        )

    def checked(self) -> "StepResult":
        """This result, or :class:`RunxError` when the run failed."""
        if self.ok:
            return self
        err = self.error or {}
        raise RunxError(
            str(err.get("kind", "internal")),
            str(err.get("code", "unknown")),
            str(err.get("message", "the step failed")),
            self,
        )


class Step:
    """A submitted ``run``: its request id, its answer when it comes, and a way to cancel it."""

    def __init__(self, client: "Client", request_id: RequestId, future: "Future[JsonObject]") -> None:
        self._client = client
        self.id = request_id
        self._future = future

    def done(self) -> bool:
        """Whether the answer arrived."""
        return self._future.done()

    def cancel(self) -> bool:
        """Asks the server to cancel this step: it answers ``interrupted``. Whether it was still
        in flight."""
        return self._client.cancel(self.id)

    def result(self, timeout: Optional[float] = None, check: bool = True) -> StepResult:
        """Waits for the answer. After ``timeout`` seconds the step is cancelled and
        :class:`TimeoutError` raised. With ``check``, a failed run raises :class:`RunxError`."""
        try:
            answer = self._future.result(timeout)
        except FutureTimeout:
            self.cancel()
            try:
                self._future.result(10)
            except Exception:  # the cancelled answer itself does not matter here
                pass
            raise TimeoutError(f"step {self.id!r} did not finish within {timeout} s; cancelled")
        result = StepResult.from_json(_result_of(answer))
        return result.checked() if check else result


def _result_of(answer: JsonObject) -> Any:
    error = answer.get("error")
    if error is not None:
        code = int(error.get("code", 0))
        message = str(error.get("message", ""))
        data = error.get("data")
        if code == BUSY:
            raise BusyError(code, message, data)
        if code == PACKAGE_FAILURE and isinstance(data, dict):
            raise RunxError(str(data.get("kind")), str(data.get("code")), str(data.get("message")))
        raise ServeError(code, message, data)
    return answer.get("result")


class Client:
    """One ``runx serve`` process, started now and stopped by :meth:`close` (or the end of a
    ``with`` block). Safe to use from several threads at once.

    ``runx`` is the executable; ``pool_size`` steps run at once and ``queue`` more wait
    (runx's defaults when ``None``). ``cwd`` is the server's working directory: relative
    ``skill``, ``cwd`` and ``receipt_dir`` of requests resolve against it. ``env`` is the
    server's own environment (never a step's: each step sees only its request's ``env``).
    """

    def __init__(
        self,
        runx: PathLike = "runx",
        *,
        pool_size: Optional[int] = None,
        queue: Optional[int] = None,
        cwd: Optional[PathLike] = None,
        env: Optional[Mapping[str, str]] = None,
        engine: Optional[str] = None,
        stderr: Union[int, IO[Any], None] = None,
    ) -> None:
        args = [os.fspath(runx)]
        if engine is not None:
            args += ["--engine", engine]
        args.append("serve")
        if pool_size is not None:
            args += ["--pool-size", str(pool_size)]
        if queue is not None:
            args += ["--queue", str(queue)]
        self._proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=None if cwd is None else os.fspath(cwd),
            env=None if env is None else dict(env),
        )
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pending: Dict[str, "Future[JsonObject]"] = {}
        self._progress: Dict[str, Callable[[Progress], None]] = {}
        self._gone: Optional[str] = None
        self._reader = threading.Thread(target=self._read, name="runx-serve-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self._proc.pid

    # Requests --------------------------------------------------------------------------------

    def submit(
        self,
        skill: PathLike,
        inputs: Optional[Mapping[str, Any]] = None,
        *,
        runner: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[PathLike] = None,
        receipt_dir: Optional[PathLike] = None,
        on_progress: Optional[Callable[[Progress], None]] = None,
    ) -> Step:
        """Sends a ``run`` and returns at once; :meth:`Step.result` waits for it."""
        params: JsonObject = {"skill": os.fspath(skill), "inputs": dict(inputs or {})}
        if runner is not None:
            params["runner"] = runner
        if env is not None:
            params["env"] = dict(env)
        if cwd is not None:
            params["cwd"] = os.fspath(cwd)
        if receipt_dir is not None:
            params["receipt_dir"] = os.fspath(receipt_dir)
        if on_progress is not None:
            params["progress"] = True
        request_id, future = self._send("run", params, on_progress)
        return Step(self, request_id, future)

    def run(
        self,
        skill: PathLike,
        inputs: Optional[Mapping[str, Any]] = None,
        *,
        runner: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[PathLike] = None,
        receipt_dir: Optional[PathLike] = None,
        on_progress: Optional[Callable[[Progress], None]] = None,
        timeout: Optional[float] = None,
        check: bool = True,
    ) -> StepResult:
        """Runs one runner of the package ``skill`` and waits for its result. Only ``env`` is
        visible to the step. A failed run raises :class:`RunxError` unless ``check`` is false;
        after ``timeout`` seconds the step is cancelled and :class:`TimeoutError` raised."""
        step = self.submit(
            skill,
            inputs,
            runner=runner,
            env=env,
            cwd=cwd,
            receipt_dir=receipt_dir,
            on_progress=on_progress,
        )
        return step.result(timeout, check)

    def inspect(self, skill: PathLike, timeout: Optional[float] = None) -> JsonObject:
        """The description ``runx skill inspect --json`` gives; :class:`RunxError` when the
        package cannot be loaded."""
        _, future = self._send("inspect", {"skill": os.fspath(skill)})
        result = _result_of(future.result(timeout))
        if not isinstance(result, dict):
            raise ServeError(0, f"inspect answered {result!r}")
        return result

    def cancel(self, request_id: RequestId) -> bool:
        """Cancels the request ``request_id`` (its worker or process group is killed; it
        answers ``interrupted``). Whether it was still in flight."""
        _, future = self._send("cancel", {"id": request_id})
        result = _result_of(future.result(30))
        return bool(isinstance(result, dict) and result.get("cancelled"))

    def shutdown(self, cancel: bool = False, timeout: Optional[float] = None) -> None:
        """Stops the server: steps in flight finish (or, with ``cancel``, answer
        ``interrupted``), then it exits. Waits up to ``timeout`` seconds."""
        if self._proc.poll() is None and self._gone is None:
            try:
                _, future = self._send("shutdown", {"cancel": cancel})
                _result_of(future.result(timeout))
            except ServerGone:
                pass
        self._close_stdin()
        self._proc.wait(timeout)

    def close(self, cancel: bool = False, timeout: float = 60.0) -> None:
        """:meth:`shutdown`, then kills the server if it has not exited within ``timeout``."""
        try:
            self.shutdown(cancel=cancel, timeout=timeout)
        except (subprocess.TimeoutExpired, FutureTimeout, ServeError, OSError):
            pass
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(5)
        for stream in (self._proc.stdout, self._proc.stdin):
            if stream is not None and not stream.closed:
                stream.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        # Leaving on an exception cancels what is still running; a normal exit lets it finish.
        self.close(cancel=exc_type is not None)

    # Plumbing --------------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        params: JsonObject,
        on_progress: Optional[Callable[[Progress], None]] = None,
    ) -> "tuple[RequestId, Future[JsonObject]]":
        request_id: RequestId = next(self._ids)
        key = json.dumps(request_id)
        future: "Future[JsonObject]" = Future()
        line = json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
            separators=(",", ":"),
        )
        with self._lock:
            if self._gone is not None:
                raise ServerGone(self._gone)
            self._pending[key] = future
            if on_progress is not None:
                self._progress[key] = on_progress
        try:
            with self._write_lock:
                stdin = self._proc.stdin
                if stdin is None:
                    raise BrokenPipeError("the server's stdin is closed")
                stdin.write(line.encode() + b"\n")
                stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as e:
            with self._lock:
                self._pending.pop(key, None)
                self._progress.pop(key, None)
            raise ServerGone(f"cannot send to runx serve: {e}") from e
        return request_id, future

    def _close_stdin(self) -> None:
        with self._write_lock:
            stdin = self._proc.stdin
            if stdin is not None and not stdin.closed:
                try:
                    stdin.close()
                except OSError:
                    pass

    def _read(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        for raw in stdout:
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if message.get("method") == "progress":
                self._on_progress(message.get("params") or {})
                continue
            key = json.dumps(message.get("id"))
            with self._lock:
                future = self._pending.pop(key, None)
                self._progress.pop(key, None)
            if future is not None:
                future.set_result(message)
        code = self._proc.wait()
        with self._lock:
            self._gone = f"runx serve exited with code {code}"
            pending = list(self._pending.values())
            self._pending.clear()
            self._progress.clear()
        for future in pending:
            future.set_exception(ServerGone(f"runx serve exited (code {code}) before it answered"))

    def _on_progress(self, params: JsonObject) -> None:
        request_id = params.get("id")
        if not isinstance(request_id, (int, str)):
            return
        with self._lock:
            callback = self._progress.get(json.dumps(request_id))
        if callback is None:
            return
        try:
            callback(
                Progress(
                    id=request_id,
                    page_index=int(params.get("page_index", 0)),
                    bytes=int(params.get("bytes", 0)),
                    total_bytes=int(params.get("total_bytes", 0)),
                )
            )
        except Exception:  # a caller's callback must not stop the reader
            pass
