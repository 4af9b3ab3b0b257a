"""Question sets: JSON Lines, one question per line.

Every field but `id` and `question` is optional, and each one given adds the scores that need
it (`agentrt.eval.metrics`):

    {"id": "days", "question": "How many days from 2024-02-10 to 2025-03-01?",
     "expected_answer": "385 days", "expected_tools": ["days_between"], "match": "superset"}
    {"id": "invoice", "question": "Read the total and currency off invoice 7",
     "expected_output": {"total": 1280.5, "currency": "EUR"}}
    {"id": "revenue-by-region", "question": "Compare total revenue across regions",
     "strategy": "analysis", "requirements": ["data", "analysis.total", "group_by"],
     "allowed_tools": ["load_dataset", "aggregate", "plot_bar", "save_dataframe"]}
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from agentrt._validation import describe_errors
from agentrt.eval.scoring import (
    MatchMode,
)
from agentrt.exceptions import UserError

__all__ = ["EvalQuestion", "load_questions"]


class EvalQuestion(BaseModel):
    """One line of a question set."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    strategy: str | None = None
    """Run under this strategy instead of classifying."""
    expected_answer: str | None = None
    """The answer a correct run gives, compared after normalising (see `agentrt.eval.scoring`)."""
    expected_output: JsonValue = None
    """The output a correct run gives (any JSON value but null), scored per field: an object's
    top-level fields one by one, any other value as one field (see `output_fields`). A run
    without a typed output is scored on its answer text."""
    expected_tools: list[str] | None = None
    """The tools a correct run calls, in order (`finish` left out)."""
    match: MatchMode | None = None
    """How the tools called must agree with `expected_tools`; strict when not given."""
    requirements: list[str] | None = None
    """The requirement labels a correct reading of the question yields."""
    allowed_tools: list[str] | None = None
    """The tools a correct plan may call."""

    @model_validator(mode="after")
    def _match_needs_expected_tools(self) -> EvalQuestion:
        if self.match is not None and self.expected_tools is None:
            msg = f"match {self.match!r} given without expected_tools to match against"
            raise ValueError(msg)
        return self


def load_questions(path: Path) -> list[EvalQuestion]:
    """Read a question set; a bad line is a `UserError` naming the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        msg = f"cannot read the question set {path}: {exc.strerror}"
        raise UserError(msg) from None
    questions: list[EvalQuestion] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            questions.append(EvalQuestion.model_validate_json(line))
        except ValidationError as exc:
            msg = f"{path}:{number}: {describe_errors(exc, root=None, quote=False, limit=1)}"
            raise UserError(msg) from None
    ids = [q.id for q in questions]
    if duplicates := sorted({i for i in ids if ids.count(i) > 1}):
        msg = f"{path}: duplicate question ids: {', '.join(duplicates)}"
        raise UserError(msg)
    if not questions:
        msg = f"{path}: no questions"
        raise UserError(msg)
    return questions
