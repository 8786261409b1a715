"""What a step answers: its result, and where a paged run stands."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .errors import RequestId, RunxError

JsonObject = Dict[str, Any]

#: The schema of the run result ``runx skill --json`` prints and ``runx serve``'s ``run``
#: answers.
SKILL_RUN_SCHEMA = "runx.skill_run.v1"


@dataclass(frozen=True)
class Progress:
    """Where a paged run stands after a page."""

    id: RequestId
    page_index: int
    bytes: int
    total_bytes: int


@dataclass(frozen=True)
class StepResult:
    """The ``runx.skill_run.v1`` object ``runx skill --json`` prints for the same run.

    ``status`` is ``"sealed"`` whenever the run's receipt was written, *also when the run
    failed* (runx's convention), and ``"failure"`` only when no receipt could be written. Whether
    the run succeeded is ``outcome``: ``"completed"``, ``"failed"`` or ``"blocked"`` (its inputs
    were refused before it ran); :attr:`ok` says ``outcome == "completed"``.

    ``output``, ``skill`` and ``receipt`` (the names of ``runx-client`` 0.2) are read-only
    aliases of ``result``, ``skill_name`` and ``receipt_path``.
    """

    #: ``"sealed"`` (a receipt was written) or ``"failure"`` (none was).
    status: str
    #: ``"runx.skill_run.v1"`` (``None`` from a runx older than the envelope).
    schema: Optional[str] = None
    #: The package's ``skill`` name.
    skill_name: Optional[str] = None
    runner: Optional[str] = None
    #: ``run_<runner>_<16 hex>``, derived from the package and the inputs.
    run_id: Optional[str] = None
    #: ``sha256:<64 hex>``, the receipt's content address; ``None`` when none was written.
    receipt_id: Optional[str] = None
    #: ``{"disposition", "reason_code", "summary", "closed_at"}``, or ``None``.
    closure: Optional[JsonObject] = None
    #: The runner's output; ``None`` when the run failed (except a run whose receipt could not
    #: be written, which keeps its output).
    result: Any = None
    #: ``"completed"``, ``"failed"`` or ``"blocked"``.
    outcome: Optional[str] = None
    #: What to do next (always ``None`` for a runx step so far).
    next: Any = None
    #: ``{"exit_code", "message", "kind", "code"}`` of a failed run; ``None`` on success.
    error: Optional[JsonObject] = None
    #: The receipt file's path, or ``None`` when none was written.
    receipt_path: Optional[str] = None
    #: The ``{"level", "message"}`` lines a javascript runner logged (as printed: the full
    #: counts are in ``console_counts``).
    console: List[JsonObject] = field(default_factory=list)
    #: ``line_count``, ``bytes``, ``printed_bytes`` and ``dropped_bytes`` of the console.
    console_counts: JsonObject = field(default_factory=dict)
    #: A cli-tool's stderr: ``{"text", "total_bytes", "printed_bytes", "truncated", "sha256"}``;
    #: ``None`` for a javascript runner.
    stderr: Optional[JsonObject] = None
    #: The receipt document itself (a ``runx.receipt.v1``, what the receipt file holds), when
    #: the step was submitted with ``receipt_body=True`` and a receipt was written; ``None``
    #: otherwise. It verifies wherever it is written (``runx receipt verify``), so it can leave
    #: the machine that ran the step.
    receipt_body: Optional[JsonObject] = None
    #: The whole object as the server sent it.
    raw: JsonObject = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the run succeeded: ``outcome == "completed"``."""
        return self.outcome == "completed"

    @property
    def output(self) -> Any:
        """The runner's output: :attr:`result` (its name in ``runx-client`` 0.2)."""
        return self.result

    @property
    def skill(self) -> Optional[str]:
        """The skill's name: :attr:`skill_name` (its name in ``runx-client`` 0.2)."""
        return self.skill_name

    @property
    def receipt(self) -> Optional[str]:
        """The receipt file's path: :attr:`receipt_path` (its name in ``runx-client`` 0.2)."""
        return self.receipt_path

    @classmethod
    def from_json(cls, obj: JsonObject) -> "StepResult":
        """Reads a ``runx.skill_run.v1`` object (``ValueError`` when it is not one), or the
        result of a runx that predates it (no ``schema``: ``skill``, ``output`` and ``receipt``,
        and ``status`` ``"sealed"`` only on success)."""
        schema = obj.get("schema")
        if schema is None and "outcome" not in obj:
            return cls._from_legacy(obj)
        if schema != SKILL_RUN_SCHEMA:
            raise ValueError(f"a run result of schema {schema!r}, not {SKILL_RUN_SCHEMA}")
        outcome = obj.get("outcome")
        if not isinstance(outcome, str):
            raise ValueError(f"a {SKILL_RUN_SCHEMA} result without an outcome: {outcome!r}")
        console = obj.get("console") or {}
        body = obj.get("receipt_body")
        return cls(
            status=obj["status"],
            schema=schema,
            skill_name=obj.get("skill_name"),
            runner=obj.get("runner"),
            run_id=obj.get("run_id"),
            receipt_id=obj.get("receipt_id"),
            closure=obj.get("closure"),
            result=obj.get("result"),
            outcome=outcome,
            next=obj.get("next"),
            error=obj.get("error"),
            receipt_path=obj.get("receipt_path"),
            console=list(console.get("lines") or []),
            console_counts={k: v for k, v in console.items() if k != "lines"},
            stderr=obj.get("stderr"),
            receipt_body=body if isinstance(body, dict) else None,
            raw=dict(obj),
        )

    @classmethod
    def _from_legacy(cls, obj: JsonObject) -> "StepResult":
        console = obj.get("console") or {}
        body = obj.get("receipt_body")
        status = obj["status"]
        error = obj.get("error")
        return cls(
            status=status,
            skill_name=obj.get("skill"),
            runner=obj.get("runner"),
            result=obj.get("output"),
            outcome="completed" if status == "sealed" and not error else "failed",
            error=error,
            receipt_path=obj.get("receipt"),
            console=list(console.get("lines") or []),
            console_counts={k: v for k, v in console.items() if k != "lines"},
            stderr=obj.get("stderr"),
            receipt_body=body if isinstance(body, dict) else None,
            raw=dict(obj),
        )

    def failure(self) -> RunxError:
        """The :class:`RunxError` of a failed run."""
        err = self.error or {}
        return RunxError(
            str(err.get("kind", "internal")),
            str(err.get("code", "unknown")),
            str(err.get("message", "the step failed")),
            self,
        )

    def checked(self) -> "StepResult":
        """This result, or :class:`RunxError` when the run did not complete."""
        if self.ok:
            return self
        raise self.failure()
