"""One ``runx serve`` process and the steps sent to it.

Three threads of the client's own do the work, so that no caller's code ever runs where it
could hold up an answer: the *reader* reads the server's stdout and matches answers to
requests; the *dispatcher* sends the steps that waited for a slot; the *stderr* thread keeps
the server's last words. Callers' callbacks run on the callback pool (:mod:`.callbacks`).

Backpressure: the server runs ``pool_size`` steps and holds ``queue`` more; past that it
refuses a request ``busy``. The client asks the server for both (``info``) and keeps at most
their sum of steps (and ``inspect`` requests) in flight; the rest wait in the client, in order,
and go out as answers come back. A ``busy`` answer all the same (a server without ``info``,
whose capacity was guessed) puts the step back at the head of the line, to go again after a
short pause, and says the server's real capacity.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import subprocess
import threading
import time
from collections import deque
from concurrent.futures import CancelledError, Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Deque, Dict, Mapping, Optional, Tuple, Union

from .callbacks import CALLBACK_THREADS, Callbacks, Chain
from .errors import BUSY, CallbackError, RequestId, RunxError, ServeError, ServerGone, error_of
from .results import JsonObject, Progress, StepResult
from .stderr import Sink, StderrTail, gone_message

logger = logging.getLogger("runx_client")

PathLike = Union[str, "os.PathLike[str]"]
ProgressCallback = Callable[[Progress], None]

#: ``runx serve``'s default ``--queue``.
DEFAULT_QUEUE = 64
#: The most steps ``runx serve`` runs at once.
MAX_POOL_SIZE = 16
#: The first and the longest pause before a step refused ``busy`` goes again.
BUSY_PAUSE = (0.002, 0.1)
#: How long :meth:`Client.cancel` waits for the server to answer.
CANCEL_WAIT = 30.0


class _Request:
    """One request, sent or waiting to be: its line and the future its answer settles."""

    __slots__ = ("id", "key", "line", "gated", "future", "started", "written", "cancel_after_write")

    def __init__(
        self, request_id: RequestId, method: str, params: JsonObject, gated: bool, future: "Future[Any]"
    ) -> None:
        self.id = request_id
        # Answers are matched by the id's JSON text, as the server echoes it.
        self.key = json.dumps(request_id)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.line = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        #: Counted against the server's pool and queue (``run`` and ``inspect``).
        self.gated = gated
        self.future = future
        #: Its future was moved to running (done once, even when a ``busy`` step goes again).
        self.started = False
        #: Its line reached the server's stdin.
        self.written = False
        #: A cancel came between taking it off the line and writing it: send one after it.
        self.cancel_after_write = False


class Step(Future[StepResult]):
    """A submitted ``run``, and a :class:`concurrent.futures.Future` of its
    :class:`StepResult`: ``concurrent.futures.wait`` and ``as_completed`` take steps.

    A step that ran and failed completes with :class:`RunxError` (``result(check=False)``
    returns the failed :class:`StepResult` instead). When the step's progress callback
    raised, a step whose run completed (``outcome`` ``"completed"``) completes with
    :class:`CallbackError` (the callback's exception is its ``__cause__`` and
    :attr:`callback_error`), after the exception was logged.

    Callbacks given to :meth:`add_done_callback` run on the client's callback threads, after
    the step's progress callbacks, never on the thread that reads answers.
    """

    def __init__(
        self, client: "Client", request_id: RequestId, on_progress: Optional[ProgressCallback]
    ) -> None:
        super().__init__()
        #: The request id.
        self.id = request_id
        self._client = client
        self._on_progress = on_progress
        self._chain = Chain()
        #: The first exception the progress callback raised (it is not called again after
        #: one), else ``None``.
        self.callback_error: Optional[BaseException] = None

    def result(self, timeout: Optional[float] = None, check: bool = True) -> StepResult:
        """Waits up to ``timeout`` seconds for the answer (``concurrent.futures.TimeoutError``
        after that; the step goes on). With ``check``, a failed run raises :class:`RunxError`
        and a failed callback :class:`CallbackError`; without, both return the result."""
        try:
            return super().result(timeout)
        except (RunxError, CallbackError) as e:
            if not check and e.result is not None:
                return e.result
            raise

    def cancel(self) -> bool:
        """Cancels the step. One still waiting in the client for a slot is cancelled as any
        future is (``result()`` raises ``CancelledError``); one the server holds is cancelled
        there, and answers ``interrupted`` with its receipt (``result()`` raises
        :class:`RunxError`). Whether there was a step to cancel."""
        return self._cancel(wait=True)

    def add_done_callback(self, fn: Callable[["Future[StepResult]"], object]) -> None:
        chain, callbacks = self._chain, self._client._callbacks

        def hop(step: "Future[StepResult]") -> None:
            callbacks.post(chain, lambda: _call(fn, step))

        super().add_done_callback(hop)

    # For the client ----------------------------------------------------------------------

    def _add_done_callback_inline(self, fn: Callable[["Future[StepResult]"], object]) -> None:
        """A done callback that runs where the step completes: for quick hand-offs only."""
        super().add_done_callback(fn)

    def _cancel(self, wait: bool) -> bool:
        if self.done():
            return False
        where = self._client._withdraw(self)
        if where == "withdrawn":
            _drop_future(self)
            return True
        if where == "later":
            return True
        return self._client._cancel_sent(self.id, wait)

    def _report(self, progress: Progress) -> None:
        """Calls the progress callback (on a callback thread)."""
        callback = self._on_progress
        if callback is None or self.callback_error is not None:
            return
        try:
            callback(progress)
        except BaseException as e:  # whatever it raised is the caller's to see
            self.callback_error = e
            logger.exception(
                "the progress callback of runx step %r raised; it is not called again for this step",
                self.id,
            )

    def _settle(self, message: JsonObject) -> None:
        """Completes the step with its answer."""
        outcome = _outcome(message)
        error = self.callback_error
        if isinstance(outcome, StepResult) and error is not None:
            failed = CallbackError(
                f"step {self.id!r} completed, but its progress callback raised "
                f"{type(error).__name__}: {error}",
                self.id,
                outcome,
            )
            failed.__cause__ = error
            outcome = failed
        self._finish(outcome)

    def _finish(self, outcome: Union[StepResult, BaseException]) -> None:
        try:
            if isinstance(outcome, BaseException):
                self.set_exception(outcome)
            else:
                self.set_result(outcome)
        except InvalidStateError:  # cancelled while it waited in the client
            pass


def _call(fn: Callable[["Future[StepResult]"], object], step: "Future[StepResult]") -> None:
    try:
        fn(step)
    except BaseException:  # as concurrent.futures does: log, go on
        logger.exception("a done callback of runx step %r raised", getattr(step, "id", None))


def _outcome(message: JsonObject) -> Union[StepResult, Exception]:
    """A ``run`` answer as the result or the exception a step completes with."""
    error = message.get("error")
    if error is not None:
        return error_of(error if isinstance(error, dict) else {"message": str(error)})
    result = message.get("result")
    if not isinstance(result, dict) or not isinstance(result.get("status"), str):
        return ServeError(0, f"runx serve answered a run with {result!r}"[:1000])
    try:
        step = StepResult.from_json(result)
    except (AttributeError, TypeError, ValueError) as e:
        return ServeError(0, f"runx serve answered a run with a result this client cannot read: {e}")
    return step if step.ok else step.failure()


def _result_of(message: JsonObject) -> Any:
    """The result of an answer, or its error raised."""
    error = message.get("error")
    if error is not None:
        raise error_of(error if isinstance(error, dict) else {"message": str(error)})
    return message.get("result")


def _is_busy(message: JsonObject) -> bool:
    error = message.get("error")
    return isinstance(error, dict) and error.get("code") == BUSY


def _cpus() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return min(max(n, 1), MAX_POOL_SIZE)


def run_params(
    skill: PathLike,
    inputs: Optional[Mapping[str, Any]],
    runner: Optional[str],
    env: Optional[Mapping[str, str]],
    cwd: Optional[PathLike],
    receipt_dir: Optional[PathLike],
    progress: bool,
    receipt_body: bool,
) -> JsonObject:
    """The ``params`` of a ``run`` request."""
    params: JsonObject = {"skill": os.fspath(skill), "inputs": dict(inputs or {})}
    if runner is not None:
        params["runner"] = runner
    if env is not None:
        params["env"] = dict(env)
    if cwd is not None:
        params["cwd"] = os.fspath(cwd)
    if receipt_dir is not None:
        params["receipt_dir"] = os.fspath(receipt_dir)
    if progress:
        params["progress"] = True
    if receipt_body:
        params["receipt_body"] = True
    return params


class Client:
    """One ``runx serve`` process, started now and stopped by :meth:`close` (or the end of a
    ``with`` block). Safe to use from several threads at once.

    ``runx`` is the executable; ``pool_size`` steps run at once and ``queue`` more wait in the
    server (runx's defaults when ``None``). ``cwd`` is the server's working directory: relative
    ``skill``, ``cwd`` and ``receipt_dir`` of requests resolve against it. ``env`` is the
    server's own environment (never a step's: each step sees only its request's ``env``).
    ``sign_key`` is a key file the server signs receipts with (``--sign-key``; else a key in
    its environment, if any); ``require_signed`` refuses to start without a key.

    ``backpressure`` (the default): at most ``pool_size + queue`` steps are in the server at a
    time and the rest wait in the client, so no step is refused :class:`BusyError`; with
    ``backpressure=False`` every step is sent at once and a full server refuses it.

    ``stderr`` is where the server's stderr is copied: ``None`` (the default) logs each line
    on the ``runx_client.serve`` logger, ``subprocess.DEVNULL`` drops it, a file descriptor or
    a file receives it. Its last lines are kept either way: :class:`ServerGone` quotes them.

    Progress and done callbacks run on a pool of ``callback_threads`` threads, one at a time
    per step, so a slow callback holds up its own step only.
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
        sign_key: Optional[PathLike] = None,
        require_signed: bool = False,
        stderr: Sink = None,
        backpressure: bool = True,
        callback_threads: int = CALLBACK_THREADS,
    ) -> None:
        args = [os.fspath(runx)]
        if engine is not None:
            args += ["--engine", engine]
        args.append("serve")
        if pool_size is not None:
            args += ["--pool-size", str(pool_size)]
        if queue is not None:
            args += ["--queue", str(queue)]
        if sign_key is not None:
            args += ["--sign-key", os.fspath(sign_key)]
        if require_signed:
            args.append("--require-signed")
        self._proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=None if cwd is None else os.fspath(cwd),
            env=None if env is None else dict(env),
        )
        self._backpressure = backpressure
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._write_lock = threading.Lock()
        self._pending: Dict[str, _Request] = {}
        self._waiting: Deque[_Request] = deque()
        self._in_flight = 0
        # Learned from `info` (or from a `busy` answer); the guess serves a server without it.
        self._capacity: Optional[int] = None
        self._guess = (pool_size or _cpus()) + (DEFAULT_QUEUE if queue is None else queue)
        self._retry_at = 0.0
        self._pause = BUSY_PAUSE[0]
        #: Requests the server refused busy and that went again (none, from a server with
        #: `info`).
        self._busy_answers = 0
        self._closing = False
        self._gone: Optional[ServerGone] = None
        self._callbacks = Callbacks(callback_threads)
        assert self._proc.stderr is not None
        self._stderr = StderrTail(self._proc.stderr, stderr)
        # The first request, registered before the reader starts: its answer sets the capacity.
        info: "Future[JsonObject]" = Future()
        first = _Request(next(self._ids), "info", {}, False, info)
        self._info = info
        with self._lock:
            self._start(first)
        self._reader = threading.Thread(target=self._read, name="runx-serve-reader", daemon=True)
        self._reader.start()
        self._write(first)
        self._dispatcher = threading.Thread(
            target=self._dispatch, name="runx-serve-dispatch", daemon=True
        )
        self._dispatcher.start()

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
        on_progress: Optional[ProgressCallback] = None,
        receipt_body: bool = False,
    ) -> Step:
        """Sends a ``run`` (or lines it up for a free slot) and returns at once. With
        ``receipt_body``, the result carries the receipt document (:attr:`StepResult.receipt_body`).
        Raises :class:`ServerGone` when the server has exited."""
        params = run_params(
            skill, inputs, runner, env, cwd, receipt_dir, on_progress is not None, receipt_body
        )
        return self._submit_step(params, on_progress, direct=True)

    def run(
        self,
        skill: PathLike,
        inputs: Optional[Mapping[str, Any]] = None,
        *,
        runner: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[PathLike] = None,
        receipt_dir: Optional[PathLike] = None,
        on_progress: Optional[ProgressCallback] = None,
        receipt_body: bool = False,
        timeout: Optional[float] = None,
        check: bool = True,
    ) -> StepResult:
        """Runs one runner of the package ``skill`` and waits for its result. Only ``env`` is
        visible to the step. A failed run raises :class:`RunxError` unless ``check`` is false;
        after ``timeout`` seconds (waiting for a slot included) the step is cancelled and
        :class:`TimeoutError` raised."""
        step = self.submit(
            skill,
            inputs,
            runner=runner,
            env=env,
            cwd=cwd,
            receipt_dir=receipt_dir,
            on_progress=on_progress,
            receipt_body=receipt_body,
        )
        try:
            return step.result(timeout, check)
        except FutureTimeout:
            step._cancel(wait=False)
            try:
                step.exception(10)
            except (FutureTimeout, CancelledError):  # the cancelled answer does not matter here
                pass
            raise TimeoutError(f"step {step.id!r} did not finish within {timeout} s; cancelled") from None

    def inspect(self, skill: PathLike, timeout: Optional[float] = None) -> JsonObject:
        """The description ``runx skill inspect --json`` gives; :class:`RunxError` when the
        package cannot be loaded."""
        return _inspect_result(self._submit_inspect(skill, direct=True).result(timeout))

    def info(self, timeout: Optional[float] = None) -> JsonObject:
        """What the server said of itself when it started: ``{"pool_size", "queue",
        "version"}``."""
        result = _result_of(self._info.result(timeout))
        if not isinstance(result, dict):
            raise ServeError(0, f"info answered {result!r}")
        return result

    def cancel(self, request_id: RequestId) -> bool:
        """Cancels the request ``request_id``: see :meth:`Step.cancel`. Whether it was still in
        flight."""
        with self._lock:
            step = next((r.future for r in self._waiting if r.id == request_id), None)
        if isinstance(step, Step):
            return step.cancel()
        return self._cancel_sent(request_id, wait=True)

    def shutdown(self, cancel: bool = False, timeout: Optional[float] = None) -> None:
        """Stops the server. Steps submitted so far are sent and finish (with ``cancel``, those
        still waiting in the client are cancelled and those in the server answer
        ``interrupted``), then it exits. Waits up to ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout

        def left() -> Optional[float]:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        with self._changed:
            self._closing = True
            withdrawn = list(self._waiting) if cancel else []
            if cancel:
                self._waiting.clear()
            # Everything answered first: a step refused busy late could go again after the
            # server stopped taking requests.
            while not cancel and (self._waiting or self._in_flight) and self._gone is None:
                if left() == 0.0:
                    raise FutureTimeout("steps still running at the end of the timeout")
                self._changed.wait(left())
        for req in withdrawn:
            _drop(req)
        if self._proc.poll() is None and self._gone is None:
            try:
                _result_of(self._send_now("shutdown", {"cancel": cancel}).result(left()))
            except ServerGone:
                pass
        self._close_stdin()
        self._proc.wait(left())

    def close(self, cancel: bool = False, timeout: Optional[float] = None) -> None:
        """:meth:`shutdown`, then kills the server if it has not exited within ``timeout``
        seconds (by default it waits for every submitted step, each bounded by its own wall
        limit; with ``cancel``, at most a minute)."""
        if timeout is None and cancel:
            timeout = 60.0
        try:
            self.shutdown(cancel=cancel, timeout=timeout)
        except (subprocess.TimeoutExpired, FutureTimeout, ServeError, OSError):
            pass
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(5)
        self._dispatcher.join(5)
        self._callbacks.close()
        for stream in (self._proc.stdout, self._proc.stdin):
            if stream is not None and not stream.closed:
                stream.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        # Leaving on an exception cancels what is still running; a normal exit lets it finish.
        self.close(cancel=exc_type is not None)

    # Sending ---------------------------------------------------------------------------------

    def _submit_step(
        self, params: JsonObject, on_progress: Optional[ProgressCallback], direct: bool
    ) -> Step:
        request_id = next(self._ids)
        step = Step(self, request_id, on_progress)
        self._enqueue(_Request(request_id, "run", params, self._backpressure, step), direct)
        return step

    def _submit_inspect(self, skill: PathLike, direct: bool) -> "Future[JsonObject]":
        future: "Future[JsonObject]" = Future()
        params = {"skill": os.fspath(skill)}
        self._enqueue(_Request(next(self._ids), "inspect", params, self._backpressure, future), direct)
        return future

    def _enqueue(self, req: _Request, direct: bool) -> None:
        """Sends ``req`` now (on this thread, when ``direct``) if a slot is free and nothing
        waits before it; else lines it up for the dispatcher."""
        with self._changed:
            if self._gone is not None:
                raise self._gone_again()
            if self._closing:
                raise ServerGone("this client was closed: runx serve takes no more requests")
            now = direct and not self._waiting and self._may_send(req) and self._start(req)
            if not now:
                self._waiting.append(req)
                self._changed.notify_all()
        if now:
            self._write(req)

    def _send_now(self, method: str, params: JsonObject) -> "Future[JsonObject]":
        """Sends a request the server answers at once (``cancel``, ``shutdown``)."""
        future: "Future[JsonObject]" = Future()
        req = _Request(next(self._ids), method, params, False, future)
        with self._lock:
            if self._gone is not None:
                future.set_exception(self._gone_again())
                return future
            self._start(req)
        self._write(req)
        return future

    def _may_send(self, req: _Request) -> bool:
        """Whether ``req`` may go now. Under the lock."""
        if not req.gated:
            return True
        return (
            self._capacity is not None
            and self._in_flight < self._capacity
            and time.monotonic() >= self._retry_at
        )

    def _start(self, req: _Request) -> bool:
        """Counts ``req`` as sent, before it is written, so its answer always finds it; False
        when its future was cancelled while it waited. Under the lock."""
        if not req.started:
            if not req.future.set_running_or_notify_cancel():
                return False
            req.started = True
        if req.gated:
            self._in_flight += 1
        self._pending[req.key] = req
        return True

    def _write(self, req: _Request) -> None:
        try:
            with self._write_lock:
                stdin = self._proc.stdin
                if stdin is None or stdin.closed:
                    raise BrokenPipeError("the server's stdin is closed")
                stdin.write(req.line)
                stdin.flush()
        except (OSError, ValueError):
            # The server is gone or going: the reader fails the request, with the server's
            # reason, when it reads the end of its output.
            return
        with self._lock:
            req.written = True
            cancel = req.cancel_after_write
        if cancel:
            self._send_now("cancel", {"id": req.id})

    def _dispatch(self) -> None:
        """Sends what waited, as slots free, until the server is gone."""
        while True:
            with self._changed:
                while True:
                    if self._gone is not None:
                        return
                    req, pause = self._next()
                    if req is not None:
                        break
                    self._changed.wait(pause)
            self._write(req)

    def _next(self) -> Tuple[Optional[_Request], Optional[float]]:
        """The next request to send, or how long to wait before looking again (``None``: until
        something changes). Under the lock."""
        while self._waiting:
            req = self._waiting[0]
            if not self._may_send(req):
                pausing = self._capacity is not None and self._in_flight < self._capacity
                return None, max(0.0, self._retry_at - time.monotonic()) if pausing else None
            self._waiting.popleft()
            if self._start(req):
                return req, None
        return None, None

    def _withdraw(self, step: Step) -> str:
        """Takes ``step`` back if it was not sent: ``withdrawn`` when it waited in the client,
        ``later`` when it is being written (a cancel will follow it), else ``sent``."""
        with self._lock:
            for req in self._waiting:
                if req.future is step:
                    self._waiting.remove(req)
                    self._changed.notify_all()
                    return "withdrawn"
            sent = self._pending.get(json.dumps(step.id))
            if sent is not None and not sent.written:
                sent.cancel_after_write = True
                return "later"
        return "sent"

    def _cancel_sent(self, request_id: RequestId, wait: bool) -> bool:
        answer = self._send_now("cancel", {"id": request_id})
        if not wait:
            return True
        try:
            result = _result_of(answer.result(CANCEL_WAIT))
        except (ServerGone, FutureTimeout):
            return False
        return bool(isinstance(result, dict) and result.get("cancelled"))

    def _close_stdin(self) -> None:
        with self._write_lock:
            stdin = self._proc.stdin
            if stdin is not None and not stdin.closed:
                try:
                    stdin.close()
                except OSError:
                    pass

    # Reading ---------------------------------------------------------------------------------

    def _read(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        try:
            for raw in stdout:
                try:
                    self._receive(raw)
                except Exception:  # one odd answer must not end the reader and every step
                    logger.exception("runx_client could not handle an answer: %r", raw[:200])
        except (OSError, ValueError):  # the stream was closed under us
            pass
        finally:
            self._end()

    def _receive(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            logger.warning("runx serve wrote a line that is not JSON: %r", raw[:200])
            return
        if not isinstance(message, dict):
            return
        if message.get("method") == "progress":
            self._progress(message.get("params"))
            return
        busy = _is_busy(message)
        with self._changed:
            req = self._pending.pop(json.dumps(message.get("id")), None)
            if req is not None and req.gated:
                self._in_flight -= 1
                if not busy:
                    self._retry_at, self._pause = 0.0, BUSY_PAUSE[0]
                self._changed.notify_all()
        if req is None:
            logger.warning("runx serve answered no request of this client: %s", raw[:500])
            return
        if req.future is self._info:
            self._learn(message)
        if busy and req.gated:
            self._again(req, message)
            return
        future = req.future
        if isinstance(future, Step):
            if future._on_progress is not None:
                # After the pages already reported, so the result comes last.
                self._callbacks.post(future._chain, lambda: future._settle(message))
            else:
                future._settle(message)
        else:
            try:
                future.set_result(message)
            except InvalidStateError:
                pass

    def _learn(self, message: JsonObject) -> None:
        """The capacity, from the answer to ``info`` (a guess for a server without it)."""
        result = message.get("result")
        with self._changed:
            if isinstance(result, dict) and all(
                isinstance(result.get(k), int) for k in ("pool_size", "queue")
            ):
                self._capacity = max(1, int(result["pool_size"]) + int(result["queue"]))
            else:
                self._capacity = self._guess
            self._changed.notify_all()

    def _again(self, req: _Request, message: JsonObject) -> None:
        """A request refused busy goes back to the head of the line, after a pause; the
        refusal says how much the server holds."""
        data = (message.get("error") or {}).get("data")
        with self._changed:
            if isinstance(data, dict) and all(
                isinstance(data.get(k), int) for k in ("pool_size", "queue_limit")
            ):
                self._capacity = max(1, int(data["pool_size"]) + int(data["queue_limit"]))
            self._retry_at = time.monotonic() + self._pause
            self._pause = min(self._pause * 2, BUSY_PAUSE[1])
            self._busy_answers += 1
            self._waiting.appendleft(req)
            self._changed.notify_all()
        logger.debug("runx serve was busy; request %r waits for a slot again", req.id)

    def _progress(self, params: Any) -> None:
        if not isinstance(params, dict) or not isinstance(params.get("id"), (int, str)):
            return
        with self._lock:
            req = self._pending.get(json.dumps(params["id"]))
        step = None if req is None else req.future
        if not isinstance(step, Step) or step._on_progress is None:
            return
        try:
            progress = Progress(
                id=params["id"],
                page_index=int(params.get("page_index", 0)),
                bytes=int(params.get("bytes", 0)),
                total_bytes=int(params.get("total_bytes", 0)),
            )
        except (TypeError, ValueError):
            return
        self._callbacks.post(step._chain, lambda: step._report(progress))

    def _end(self) -> None:
        """The server's output ended: every request not answered, sent or waiting, fails with
        :class:`ServerGone`, which says how the server ended and what it last wrote."""
        try:
            code: Optional[int] = self._proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            code = None
        tail = self._stderr.text(wait=2.0)
        with self._changed:
            self._gone = ServerGone(gone_message(code, tail), code, tail)
            orphans = list(self._pending.values()) + list(self._waiting)
            self._pending.clear()
            self._waiting.clear()
            self._in_flight = 0
            self._changed.notify_all()
        for req in orphans:
            self._fail(req.future, self._gone_again())

    def _fail(self, future: "Future[Any]", error: BaseException) -> None:
        if isinstance(future, Step) and future._on_progress is not None:
            # After the pages already reported.
            self._callbacks.post(future._chain, lambda: future._finish(error))
        elif isinstance(future, Step):
            future._finish(error)
        else:
            try:
                future.set_exception(error)
            except InvalidStateError:
                pass

    def _gone_again(self) -> ServerGone:
        """A fresh :class:`ServerGone` for one more caller (an exception raised in two threads
        at once would share its traceback)."""
        gone = self._gone
        assert gone is not None
        return ServerGone(gone.message, gone.returncode, gone.stderr)


def _drop(req: _Request) -> None:
    _drop_future(req.future)


def _drop_future(future: "Future[Any]") -> None:
    """Cancels a request that never reached the server (or was refused busy and waited
    again: then its future runs already, and fails with ``CancelledError``)."""
    if Future.cancel(future):
        return
    error = CancelledError("cancelled before runx serve took it")
    if isinstance(future, Step):
        future._finish(error)
    else:
        try:
            future.set_exception(error)
        except InvalidStateError:
            pass


def _inspect_result(message: JsonObject) -> JsonObject:
    result = _result_of(message)
    if not isinstance(result, dict):
        raise ServeError(0, f"inspect answered {result!r}")
    return result
