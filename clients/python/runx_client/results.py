"""What a step answers: its result, and where a paged run stands."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .errors import RequestId, RunxError

JsonObject = Dict[str, Any]


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
    #: The receipt document itself (what the receipt file holds), when the step was submitted
    #: with ``receipt_body=True`` and a receipt was written; ``None`` otherwise. It verifies
    #: wherever it is written (``runx receipt verify``), so it can leave the machine that ran
    #: the step.
    receipt_body: Optional[JsonObject] = None
    #: The whole object as the server sent it.
    raw: JsonObject = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the run sealed."""
        return self.status == "sealed"

    @classmethod
    def from_json(cls, obj: JsonObject) -> "StepResult":
        console = obj.get("console") or {}
        body = obj.get("receipt_body")
        return cls(
            status=obj["status"],
            skill=obj.get("skill"),
            runner=obj.get("runner"),
            output=obj.get("output"),
            receipt=obj.get("receipt"),
            error=obj.get("error"),
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
        """This result, or :class:`RunxError` when the run failed."""
        if self.ok:
            return self
        raise self.failure()
