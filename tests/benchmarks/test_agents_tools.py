"""benchmarks/agents_tools.py, family (b) of benchmarks/agentbench.py: its halves are
toolcalling's, its scorer wants the right first-turn calls *and* an answered run, and a question
runs to its end through the real agent, its turns capped while it runs."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentrt import ModelRequest, ScriptedModel
from tests.helpers import call, load_benchmark


@pytest.fixture(scope="module")
def family() -> ModuleType:
    return load_benchmark("agents_tools")


def test_the_tools_halves_are_toolcallings(family: ModuleType) -> None:
    """Tuning is toolcalling's dev half, held-out its held-out half: disjoint, every kind in
    each, the same every time."""
    toolcalling = load_benchmark("toolcalling")
    _, questions = toolcalling.load()
    tuning, held_out = family.tasks("tuning"), family.tasks("held-out")
    assert [q.id for q in tuning] == [q.id for q in toolcalling.half(questions, "dev")]
    assert [q.id for q in held_out] == [q.id for q in toolcalling.half(questions, "held-out")]
    assert {q.id for q in tuning}.isdisjoint(q.id for q in held_out)
    assert len(tuning) + len(held_out) == len(questions)
    assert {q.kind for q in tuning} == {q.kind for q in held_out} == set(toolcalling.KINDS)
    assert [q.id for q in family.tasks("tuning")] == [q.id for q in tuning]


def _summary(agents_common: ModuleType, status: str = "ok", doubt: str | None = None) -> Any:
    return agents_common.RunSummary(
        status=status,
        doubt=doubt,
        answer="done",
        seconds=1.0,
        steps=2,
        tool_calls=1,
        failed_calls=0,
        invalid_calls=0,
        invalid_plans=0,
        repairs=0,
        fallbacks=0,
    )


def test_the_tools_scorer_wants_the_calls_and_an_answer(family: ModuleType) -> None:
    """Right calls and an answered run: right; wrong calls, a doubted or failed run, an
    invalid call where none fits: wrong."""
    common = load_benchmark("agents_common")
    question = next(q for q in family.tasks("tuning") if q.kind == "parallel")
    none = next(q for q in family.tasks("tuning") if q.kind == "none")
    good = family.FirstTurn(calls=list(reversed(question.calls)))

    def right(q: Any, turn: Any, run: Any) -> bool:
        return bool(family.score(q, turn, run).right)

    answered = _summary(common)
    assert right(question, good, answered)
    assert not right(question, family.FirstTurn(calls=question.calls[:1]), answered)
    assert not right(question, good, _summary(common, doubt="raw_tool_call"))
    assert not right(question, good, _summary(common, status="error"))
    assert not right(question, good, _summary(common, status="budget_exhausted"))
    assert right(none, family.FirstTurn(), answered)
    assert not right(none, family.FirstTurn(invalid=True), answered)
    assert not right(none, family.FirstTurn(calls=question.calls[:1]), answered)
    row = family.score(question, family.FirstTurn(), answered)
    assert row.detail.startswith("expected ")
    assert row.detail.endswith("first turn no call")


async def test_a_tools_question_runs_to_its_end(family: ModuleType, tmp_path: Path) -> None:
    """A parallel question through the real agent: both calls, the stub results, an answer;
    every turn capped while it runs, the cap restored after."""
    question = next(q for q in family.tasks("tuning") if q.kind == "parallel")
    (name, arguments), (name2, arguments2) = question.calls[:2]
    caps: list[int] = []
    model = ScriptedModel([call(name, **arguments) + call(name2, **arguments2), "Both done."])
    model.max_tokens = 512  # type: ignore[attr-defined]
    stream = model.stream

    def capped(request: ModelRequest) -> Any:
        caps.append(model.max_tokens)  # type: ignore[attr-defined]
        return stream(request)

    model.stream = capped  # type: ignore[method-assign]
    lines: list[str] = []
    kwargs: dict[str, Any] = {"planner": "react", "workdir": tmp_path, "progress": lines.append}
    (row,) = await family.run([question], model=model, model_name="m", max_tokens=99, **kwargs)
    assert (row.right, row.kind, row.run.status, row.run.tool_calls) == (True, "parallel", "ok", 2)
    assert row.run.answer == "Both done."
    assert caps == [99, 99]
    assert model.max_tokens == 512  # type: ignore[attr-defined]
    said = f"ok, right, {row.run.seconds:.1f} s: calls right, answered"
    assert lines[-1] == f"[1/1] tools react {question.id}: {said}"
    wrong = ScriptedModel([call(name, **arguments), "One done."])
    (row,) = await family.run([question], model=wrong, model_name="m", **kwargs)
    assert (row.right, row.run.status) == (False, "ok")
