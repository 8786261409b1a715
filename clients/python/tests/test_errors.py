"""Errors that travel (pickled into other processes) and servers that end badly."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import signal
import subprocess
from concurrent.futures import ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import pytest

from runx_client import (
    BusyError,
    CallbackError,
    Client,
    RunxError,
    ServeError,
    ServerGone,
    StepResult,
)

RESULT = StepResult(
    status="sealed",
    schema="runx.skill_run.v1",
    skill_name="steps",
    runner="needs-region",
    run_id="run_needs-region_0123456789abcdef",
    receipt_id="sha256:" + "ab" * 32,
    closure={"disposition": "failed", "reason_code": "process_failed"},
    result=None,
    outcome="failed",
    receipt_path="/tmp/sha256-" + "ab" * 32 + ".json",
    error={"exit_code": None, "kind": "environment", "code": "missing_environment", "message": "REGION"},
    receipt_body={"id": "sha256:" + "ab" * 32, "schema": "runx.receipt.v1"},
    raw={"status": "sealed", "outcome": "failed"},
)


@pytest.mark.parametrize(
    "error",
    [
        ServeError(-32602, "invalid params for `run`: ...", {"at": "inputs"}),
        BusyError(-32001, "busy", {"running": 1, "queued": 0, "pool_size": 1, "queue_limit": 0}),
        ServerGone("runx serve exited with code 64: runx: --engine nope", 64, "runx: --engine nope"),
        RunxError("environment", "missing_environment", "REGION is not set", RESULT),
        RunxError("profile", "missing_profile", "no X.yaml"),
        CallbackError("step 3 sealed, but its progress callback raised ValueError: x", 3, RESULT),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_round_trip_through_pickle(error: Exception) -> None:
    if hasattr(error, "add_note"):  # Python 3.11 and later
        error.add_note("a note added on the way")
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is type(error)
    assert str(clone) == str(error)
    assert vars(clone) == vars(error)
    assert clone.args == error.args
    if isinstance(error, RunxError) and error.result is not None:
        assert (clone.receipt, clone.receipt_id, clone.outcome) == (
            RESULT.receipt_path,
            RESULT.receipt_id,
            "failed",
        )


def failing_step(runx_bin: str, workspace: str) -> Any:
    """Runs in a worker process: a step whose failure must reach the parent as it is."""
    with Client(runx_bin, cwd=workspace, pool_size=1) as runx:
        return runx.run("steps", runner="needs-region", receipt_body=True)


def test_a_step_failing_in_a_process_pool_raises_its_runx_error_in_the_parent(
    runx_bin: str, workspace: Path
) -> None:
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        future = pool.submit(failing_step, runx_bin, str(workspace))
        with pytest.raises(RunxError) as caught:
            future.result(120)
    error = caught.value
    assert (error.kind, error.code) == ("environment", "missing_environment")
    assert error.receipt is not None and Path(error.receipt).is_file()
    assert error.result is not None and error.result.receipt_body is not None
    assert error.result.receipt_body == json.loads(Path(error.receipt).read_text())
    assert error.result.receipt_body["id"] == error.receipt_id == error.result.receipt_id


@pytest.mark.parametrize("stderr", [None, subprocess.DEVNULL], ids=["logged", "devnull"])
def test_server_gone_says_what_the_server_said(
    runx_bin: str, workspace: Path, stderr: Any, caplog: pytest.LogCaptureFixture
) -> None:
    runx = Client(runx_bin, cwd=workspace, engine="nope", stderr=stderr)
    try:
        with pytest.raises(ServerGone) as caught:
            runx.run("steps", timeout=30)
        error = caught.value
        assert error.returncode == 64
        assert "exited with code 64" in str(error)
        assert "unknown engine `nope`" in str(error), str(error)
        assert "unknown engine `nope`" in error.stderr
        with pytest.raises(ServerGone):
            runx.info(10)
        clone = pickle.loads(pickle.dumps(error))
        assert (clone.returncode, clone.stderr) == (64, error.stderr)
    finally:
        runx.close()
    logged = [r.getMessage() for r in caplog.records if r.name == "runx_client.serve"]
    if stderr is None:
        assert any("unknown engine" in m for m in logged), logged
    else:
        assert logged == []


def test_a_server_killed_mid_burst_fails_every_waiting_step(runx_bin: str, workspace: Path) -> None:
    runx = Client(runx_bin, cwd=workspace, pool_size=1, queue=1, stderr=subprocess.DEVNULL)
    try:
        steps = [runx.submit("steps", {"seconds": 0.1}, runner="sleep") for _ in range(60)]
        assert steps[0].result(30).ok
        os.kill(runx.pid, signal.SIGKILL)
        done, not_done = wait(steps, timeout=30)
        assert not not_done, f"{len(not_done)} steps hang after the server died"
        errors = [s.exception() for s in steps]
        assert all(e is None or isinstance(e, ServerGone) for e in errors), errors
        gone = [e for e in errors if isinstance(e, ServerGone)]
        assert len(gone) >= 50
        assert "killed by signal 9" in str(gone[-1]) and gone[-1].returncode == -9
        with pytest.raises(ServerGone):
            runx.submit("steps")
    finally:
        runx.close()


def test_a_server_that_exits_after_one_answer_says_why(
    fake_serve: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "exit-after-one")
    runx = Client(fake_serve, stderr=subprocess.DEVNULL)
    try:
        steps = [runx.submit("x", {"n": n}) for n in range(5)]
        wait(steps, timeout=30)
        assert steps[0].result().output == {"n": 0}
        for step in steps[1:]:
            error = step.exception()
            assert isinstance(error, ServerGone), error
            assert "exited with code 3: fake: the disk is on fire" in str(error)
    finally:
        runx.close()


def test_a_server_that_closes_its_output_fails_its_steps(
    fake_serve: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "close-stdout")
    runx = Client(fake_serve, stderr=subprocess.DEVNULL)
    try:
        with pytest.raises(ServerGone) as caught:
            runx.run("x", timeout=30)
        assert "closed its output" in str(caught.value)
    finally:
        runx.close(timeout=5)
