"""asyncio: the same client, its answers handed to the event loop.

:class:`AsyncClient` owns a :class:`~runx_client.Client` (the same reader, dispatcher and
backpressure) and turns each :class:`~runx_client.Step` into an :class:`AsyncStep`, an
``asyncio.Future`` settled on the loop when the step completes. Nothing here blocks the loop:
a step waiting for a slot waits in the client, and cancelling an ``AsyncStep`` sends the
server's ``cancel`` without waiting for its answer.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from typing import Any, Mapping, Optional

from .callbacks import CALLBACK_THREADS
from .client import Client, PathLike, ProgressCallback, Step, _inspect_result, _result_of, run_params
from .errors import CallbackError, RequestId, RunxError, ServeError
from .results import JsonObject, StepResult
from .stderr import Sink


class AsyncStep(asyncio.Future[StepResult]):
    """A submitted ``run`` on the event loop: await it, ``asyncio.gather`` or ``asyncio.wait``
    it. Cancelling it (``cancel()``, ``asyncio.wait_for``'s timeout, a cancelled task awaiting
    it) cancels the step in the server, which answers ``interrupted``."""

    def __init__(self, step: Step, check: bool, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        #: The request id.
        self.id: RequestId = step.id
        #: The step itself (a ``concurrent.futures.Future``): its receipt when it was
        #: interrupted, its ``callback_error``.
        self.step = step
        self._check = check


def _settle(future: AsyncStep, step: Step) -> None:
    """Copies the step's outcome to the loop's future. On the loop."""
    if future.done():
        return
    if step.cancelled():
        future.cancel()
        return
    error = step.exception(0)
    if error is None:
        future.set_result(step.result(0))
    elif not future._check and isinstance(error, (RunxError, CallbackError)) and error.result is not None:
        future.set_result(error.result)
    else:
        future.set_exception(error)


class AsyncClient:
    """One ``runx serve`` for asyncio code; the arguments are :class:`~runx_client.Client`'s.

    >>> async with AsyncClient("runx") as runx:                         # doctest: +SKIP
    ...     results = await asyncio.gather(*(runx.run("hello", {"name": n}) for n in names))
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
        #: The client underneath, for what has no ``async`` form.
        self.client = Client(
            runx,
            pool_size=pool_size,
            queue=queue,
            cwd=cwd,
            env=env,
            engine=engine,
            sign_key=sign_key,
            require_signed=require_signed,
            stderr=stderr,
            backpressure=backpressure,
            callback_threads=callback_threads,
        )

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.client.pid

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
        check: bool = True,
    ) -> AsyncStep:
        """Submits a ``run`` and returns its :class:`AsyncStep` at once (call it from a
        coroutine: the step belongs to the running loop). Progress callbacks run on the
        client's callback threads, not on the loop."""
        loop = asyncio.get_running_loop()
        params = run_params(
            skill, inputs, runner, env, cwd, receipt_dir, on_progress is not None, receipt_body
        )
        step = self.client._submit_step(params, on_progress, direct=False)
        future = AsyncStep(step, check, loop)

        def to_loop(_: "Future[StepResult]") -> None:
            try:
                loop.call_soon_threadsafe(_settle, future, step)
            except RuntimeError:  # the loop was closed: nobody awaits it any more
                pass

        def cancelled(f: "asyncio.Future[StepResult]") -> None:
            if f.cancelled():
                step._cancel(wait=False)

        step._add_done_callback_inline(to_loop)
        future.add_done_callback(cancelled)
        return future

    async def run(
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
        """Runs one step and returns its result: :meth:`Client.run`, awaited. After
        ``timeout`` seconds the step is cancelled and :class:`TimeoutError` raised."""
        future = self.submit(
            skill,
            inputs,
            runner=runner,
            env=env,
            cwd=cwd,
            receipt_dir=receipt_dir,
            on_progress=on_progress,
            receipt_body=receipt_body,
            check=check,
        )
        if timeout is None:
            return await future
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(
                f"step {future.id!r} did not finish within {timeout} s; cancelled"
            ) from None

    async def inspect(self, skill: PathLike) -> JsonObject:
        """:meth:`Client.inspect`, awaited."""
        answer = await asyncio.wrap_future(self.client._submit_inspect(skill, direct=False))
        return _inspect_result(answer)

    async def info(self) -> JsonObject:
        """:meth:`Client.info`, awaited."""
        result = _result_of(await asyncio.wrap_future(self.client._info))
        if not isinstance(result, dict):
            raise ServeError(0, f"info answered {result!r}")
        return result

    async def close(self, cancel: bool = False, timeout: Optional[float] = None) -> None:
        """:meth:`Client.close`, on a thread of the loop's executor."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: self.client.close(cancel=cancel, timeout=timeout))

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.close(cancel=exc_type is not None)
