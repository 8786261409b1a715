"""Reading the `runx.skill_run.v1` envelope, without a server."""

from __future__ import annotations

import pytest

from runx_client import SKILL_RUN_SCHEMA, RunxError, StepResult

RECEIPT_ID = "sha256:" + "5e" * 32
CLOSED = {
    "disposition": "closed",
    "reason_code": "process_closed",
    "summary": "javascript greet completed",
    "closed_at": "2026-12-01T20:24:06.274Z",
}
COMPLETED = {
    "schema": "runx.skill_run.v1",
    "status": "sealed",
    "skill_name": "hello",
    "runner": "greet",
    "run_id": "run_greet_6e630d808b0f1c1d",
    "receipt_id": RECEIPT_ID,
    "closure": CLOSED,
    "result": {"greeting": "Hello, Ada."},
    "outcome": "completed",
    "next": None,
    "receipt_path": "/r/sha256-" + "5e" * 32 + ".json",
    "console": {"bytes": 5, "dropped_bytes": 0, "line_count": 1, "printed_bytes": 5,
                "lines": [{"level": "log", "message": "hello"}]},
    "stderr": None,
}
ENV_ERROR = {"exit_code": None, "kind": "environment", "code": "missing_environment", "message": "set REGION"}


def test_a_completed_run() -> None:
    result = StepResult.from_json(COMPLETED)
    assert SKILL_RUN_SCHEMA == result.schema == "runx.skill_run.v1"
    assert result.ok and result.checked() is result
    assert (result.status, result.outcome, result.error) == ("sealed", "completed", None)
    assert (result.skill_name, result.runner, result.run_id) == ("hello", "greet", "run_greet_6e630d808b0f1c1d")
    assert result.receipt_id == RECEIPT_ID and result.closure == CLOSED and result.next is None
    assert result.result == {"greeting": "Hello, Ada."}
    assert result.console == [{"level": "log", "message": "hello"}]
    assert result.console_counts == {"bytes": 5, "dropped_bytes": 0, "line_count": 1, "printed_bytes": 5}
    assert result.receipt_body is None and result.raw == COMPLETED
    # The names of runx-client 0.2, read-only.
    assert (result.output, result.skill, result.receipt) == (
        result.result,
        "hello",
        COMPLETED["receipt_path"],
    )
    with pytest.raises(AttributeError):
        result.output = 1  # type: ignore[misc]


def test_a_failed_run_that_was_sealed_is_not_ok() -> None:
    failed = dict(
        COMPLETED,
        outcome="failed",
        result=None,
        error=ENV_ERROR,
        closure=dict(CLOSED, disposition="failed", reason_code="process_failed"),
        receipt_body={"schema": "runx.receipt.v1", "id": RECEIPT_ID},
    )
    result = StepResult.from_json(failed)
    assert result.status == "sealed" and not result.ok
    assert result.receipt_body == {"schema": "runx.receipt.v1", "id": RECEIPT_ID}
    error = result.failure()
    assert (error.kind, error.code, error.message) == ("environment", "missing_environment", "set REGION")
    assert error.result is result and error.receipt_id == RECEIPT_ID and error.outcome == "failed"
    assert error.receipt == COMPLETED["receipt_path"]
    with pytest.raises(RunxError):
        result.checked()


def test_blocked_and_unsealed_runs_are_not_ok() -> None:
    blocked = StepResult.from_json(
        dict(COMPLETED, outcome="blocked", result=None,
             error={"exit_code": None, "kind": "input", "code": "wrong_type", "message": "no"})
    )
    assert not blocked.ok and blocked.failure().outcome == "blocked"
    unsealed = StepResult.from_json(
        dict(COMPLETED, status="failure", outcome="failed", receipt_id=None, receipt_path=None,
             closure=None, error={"exit_code": 0, "kind": "receipt", "code": "receipt_write", "message": "disk"})
    )
    assert not unsealed.ok and unsealed.receipt is None and unsealed.receipt_id is None
    assert unsealed.output == {"greeting": "Hello, Ada."}, "the output of an unsealed run is kept"
    # An outcome other than completed is never ok, even without an error object.
    odd = StepResult.from_json(dict(COMPLETED, outcome="failed"))
    assert not odd.ok and (odd.failure().kind, odd.failure().code) == ("internal", "unknown")


@pytest.mark.parametrize(
    "obj, match",
    [
        (dict(COMPLETED, schema="runx.skill_run.v2"), "runx.skill_run.v2"),
        ({k: v for k, v in COMPLETED.items() if k != "outcome"}, "without an outcome"),
        (dict(COMPLETED, outcome=None), "without an outcome"),
        ({k: v for k, v in COMPLETED.items() if k != "schema"}, "schema None"),
    ],
)
def test_what_is_not_a_run_result_is_refused(obj: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        StepResult.from_json(obj)


def test_the_result_of_a_runx_before_the_envelope() -> None:
    sealed = StepResult.from_json(
        {"status": "sealed", "skill": "hello", "runner": "greet", "output": {"a": 1},
         "receipt": "/r/1.json", "error": None, "console": None, "stderr": None}
    )
    assert sealed.ok and (sealed.output, sealed.skill, sealed.receipt) == ({"a": 1}, "hello", "/r/1.json")
    assert sealed.schema is None and sealed.receipt_id is None
    failed = StepResult.from_json(
        {"status": "failure", "skill": "hello", "runner": "greet", "output": None,
         "receipt": "/r/2.json", "error": ENV_ERROR}
    )
    assert not failed.ok and failed.outcome == "failed" and failed.failure().code == "missing_environment"
