"""Steps as futures: concurrent.futures, asyncio, backpressure and callbacks, against the real
`runx serve` (and a fake one where the real one cannot be made to misbehave)."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, as_completed, wait
from pathlib import Path
from typing import List

import pytest

from runx_client import (
    AsyncClient,
    AsyncStep,
    BusyError,
    CallbackError,
    Client,
    Progress,
    RunxError,
    ServeError,
    Step,
)


def test_steps_are_futures_for_as_completed_and_wait(runx_bin: str, workspace: Path) -> None:
    with Client(runx_bin, cwd=workspace, pool_size=3) as runx:
        slow = runx.submit("steps", {"seconds": 1.5}, runner="sleep")
        medium = runx.submit("steps", {"seconds": 0.5}, runner="sleep")
        fast = runx.submit("steps", {"x": "fast"})
        assert all(isinstance(s, Future) for s in (slow, medium, fast))
        done, not_done = wait([slow, fast], timeout=30, return_when=FIRST_COMPLETED)
        assert done == {fast} and not_done == {slow}
        order = list(as_completed([slow, medium, fast], timeout=30))
        assert order == [fast, medium, slow]
        assert [s.result().ok for s in order] == [True, True, True]
        # A failed step is a future that completed with its RunxError.
        failed = runx.submit("steps", runner="needs-region")
        (completed,) = list(as_completed([failed], timeout=30))
        error = completed.exception()
        assert isinstance(error, RunxError) and error.code == "missing_environment"
        # runx's convention: a failed run whose receipt was written is "sealed"; it failed.
        unchecked = failed.result(check=False)
        assert (unchecked.status, unchecked.outcome, unchecked.ok) == ("sealed", "failed", False)


def test_five_hundred_submissions_at_once_all_complete_with_the_default_queue(
    runx_bin: str, workspace: Path
) -> None:
    with Client(runx_bin, cwd=workspace) as runx:
        info = runx.info(10)
        assert info["queue"] == 64 and 1 <= info["pool_size"] <= 16
        steps = [runx.submit("steps", {"n": n}) for n in range(500)]
        done, not_done = wait(steps, timeout=300)
        assert not not_done
        assert [s.result().output["inputs"]["n"] for s in steps] == list(range(500))
        assert runx._busy_answers == 0, "the client sent more than the server holds"


def test_a_full_server_makes_steps_wait_in_the_client(runx_bin: str, workspace: Path) -> None:
    # No queue at all: one step in the server, every other one waits in the client.
    with Client(runx_bin, cwd=workspace, pool_size=1, queue=0) as runx:
        slow = runx.submit("steps", {"seconds": 0.3}, runner="sleep")
        steps = [runx.submit("steps", {"n": n}) for n in range(20)]
        assert not any(s.running() for s in steps), "a step went to a full server"
        assert [s.result(30).output["inputs"]["n"] for s in steps] == list(range(20))
        assert slow.result(30).ok
        assert runx._busy_answers == 0
        # One still waiting is cancelled as a future is; the server never sees it.
        blocker = runx.submit("steps", {"seconds": 1}, runner="sleep")
        waiting = runx.submit("steps", {"n": -1})
        assert waiting.cancel() is True
        assert waiting.cancelled()
        with pytest.raises(CancelledError):
            waiting.result(1)
        assert blocker.result(30).ok


def test_a_busy_answer_sends_the_step_again(fake_serve: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fake claims a queue of 1000 and refuses every step once: each goes again, in order.
    monkeypatch.setenv("FAKE_MODE", "busy-once")
    with Client(fake_serve) as runx:
        steps = [runx.submit("x", {"n": n}) for n in range(30)]
        assert [s.result(30).output["n"] for s in steps] == list(range(30))
        assert runx._busy_answers == 30
    # Asked not to wait, the caller sees the refusal.
    with Client(fake_serve, backpressure=False) as runx:
        with pytest.raises(BusyError) as caught:
            runx.run("x", timeout=30)
        assert caught.value.data["pool_size"] == 1


def test_a_server_without_info_is_still_served(fake_serve: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_MODE", "no-info")
    with Client(fake_serve, pool_size=1, queue=1) as runx:
        steps = [runx.submit("x", {"n": n}) for n in range(10)]
        assert [s.result(30).output["n"] for s in steps] == list(range(10))


def test_lines_that_are_no_answer_of_ours_are_ignored(fake_serve: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_MODE", "garbage")
    seen: List[Progress] = []
    with Client(fake_serve) as runx:
        assert runx.run("x", {"n": 1}, on_progress=seen.append, timeout=30).output == {"n": 1}
        assert runx.run("x", {"n": 2}, timeout=30).output == {"n": 2}
        with pytest.raises(ServeError, match="cannot read"):
            runx.run("x", {"n": 3}, timeout=30)
        assert runx.run("x", {"n": 4}, timeout=30).output == {"n": 4}
        with pytest.raises(ServeError, match="cannot read.*runx.skill_run.v9"):
            runx.run("x", {"n": 5}, timeout=30)
        with pytest.raises(ServeError, match="cannot read.*without an outcome"):
            runx.run("x", {"n": 6}, timeout=30)
    assert seen == [], "a malformed progress reached the callback"


def test_the_result_of_a_runx_before_the_envelope_still_reads(
    fake_serve: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "legacy")
    with Client(fake_serve) as runx:
        result = runx.run("x", {"n": 1}, timeout=30)
    assert result.ok and result.outcome == "completed" and result.schema is None
    assert (result.result, result.skill_name, result.receipt_path) == ({"n": 1}, "fake", "/r/1.json")
    assert (result.output, result.skill, result.receipt) == ({"n": 1}, "fake", "/r/1.json")


def test_a_slow_progress_callback_holds_up_no_other_step(runx_bin: str, workspace: Path) -> None:
    entered, release = threading.Event(), threading.Event()
    reader_ran_callbacks: List[str] = []

    def slow(p: Progress) -> None:
        reader_ran_callbacks.append(threading.current_thread().name)
        entered.set()
        release.wait(1.0)  # about a second a page, until released

    with Client(runx_bin, cwd=workspace, pool_size=2) as runx:
        paged = runx.submit("steps", {"file": "items.json"}, runner="count", on_progress=slow)
        assert entered.wait(10), "no progress came"
        # While the callback sleeps: a 5 ms step completes, and so does another paged step
        # with a callback of its own.
        fast = runx.run("steps", {"x": 1}, timeout=10)
        quick: List[Progress] = []
        other = runx.run(
            "steps", {"file": "items.json"}, runner="count", on_progress=quick.append, timeout=10
        )
        assert not release.is_set() and not paged.done(), "the slow callback had finished"
        assert fast.ok and other.output == {"n": 30} and len(quick) > 2
        release.set()
        # The paged step completes after its own callbacks, every page reported first.
        assert paged.result(30).output == {"n": 30}
    assert reader_ran_callbacks and all(n.startswith("runx-callback") for n in reader_ran_callbacks)


def test_a_callback_that_raises_is_logged_and_surfaced(
    runx_bin: str, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls: List[Progress] = []

    def bad(p: Progress) -> None:
        calls.append(p)
        raise ValueError("the callback broke")

    with caplog.at_level(logging.ERROR, logger="runx_client"):
        with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
            step = runx.submit("steps", {"file": "items.json"}, runner="count", on_progress=bad)
            with pytest.raises(CallbackError) as caught:
                step.result(30)
            # Done callbacks run on the callback threads too, never on the reader.
            ran_on: List[str] = []
            ran = threading.Event()

            def done(_: object) -> None:
                ran_on.append(threading.current_thread().name)
                ran.set()

            step.add_done_callback(done)
            assert ran.wait(10)
    error = caught.value
    assert isinstance(error.__cause__, ValueError) and "the callback broke" in str(error)
    assert error.step_id == step.id and error.result.output == {"n": 30}
    assert isinstance(step.callback_error, ValueError)
    assert step.result(check=False).output == {"n": 30}
    assert len(calls) == 1, "the callback was called again after it raised"
    assert any("progress callback" in r.getMessage() and r.exc_info for r in caplog.records)
    assert ran_on and ran_on[0].startswith("runx-callback")


def test_asyncio_gather_over_steps(runx_bin: str, workspace: Path) -> None:
    async def main() -> None:
        async with AsyncClient(runx_bin, cwd=workspace, pool_size=2, queue=2) as runx:
            assert (await runx.info())["pool_size"] == 2
            # More steps than the pool and queue hold: they wait in the client, not the loop.
            results = await asyncio.gather(*(runx.run("steps", {"n": n}) for n in range(40)))
            assert [r.output["inputs"]["n"] for r in results] == list(range(40))
            steps = [runx.submit("steps", {"n": n}) for n in range(10)]
            assert all(isinstance(s, AsyncStep) and isinstance(s.step, Step) for s in steps)
            assert [r.output["inputs"]["n"] for r in await asyncio.gather(*steps)] == list(range(10))

            with pytest.raises(RunxError):
                await runx.run("steps", runner="needs-region")
            failed = await runx.run("steps", runner="needs-region", check=False)
            assert failed.status == "sealed" and failed.outcome == "failed" and not failed.ok
            assert failed.receipt_path is not None and failed.receipt == failed.receipt_path

            # A timeout cancels the step in the server; so does cancelling its future.
            with pytest.raises(TimeoutError):
                await runx.run("steps", runner="spin", timeout=0.5)
            spin = runx.submit("steps", runner="spin")
            await asyncio.sleep(0.3)
            spin.cancel()
            with pytest.raises(asyncio.CancelledError):
                await spin
            with pytest.raises(RunxError) as caught:
                await asyncio.wrap_future(spin.step)
            assert caught.value.kind == "interrupted"
            assert (await runx.inspect("steps"))["skill"] == "steps"

    asyncio.run(asyncio.wait_for(main(), 120))
