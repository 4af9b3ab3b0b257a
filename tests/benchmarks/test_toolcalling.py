"""benchmarks/toolcalling.py: its data is well-formed, its halves split it, its scoring is what
its docstring says, and a first turn is read through the real agent. Its numbers are read by
people, never asserted here."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from agentrt import ScriptedModel
from tests.helpers import call, load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("toolcalling")


def test_the_data_is_what_the_docstring_says(bench: ModuleType) -> None:
    tools, questions = bench.load()
    assert (len(tools), sum(map(len, tools.values()))) == (12, 60)
    assert len(questions) >= 150
    assert Counter(q.kind for q in questions) == {
        "simple": 72,
        "candidates": 36,
        "parallel": 24,
        "none": 24,
    }
    for q in questions:
        offered = {t.name: t for t in tools[q.domain]}
        for name, arguments in q.calls:
            assert name in offered, q.id
            assert set(arguments) <= set(offered[name].args_model.model_fields), q.id
        assert (q.kind == "none") == (not q.calls), q.id
        assert (q.kind == "parallel") == (len(q.calls) > 1), q.id
        # Each is a whole sentence: YAML reads an unquoted ` #` as a comment, and "Let the
        # #general channel know …" was asked as "Let the" until it was quoted.
        assert q.text.endswith((".", "?", "!", '"')), q.id
    dev, held_out = bench.half(questions, "dev"), bench.half(questions, "held-out")
    assert {q.id for q in dev}.isdisjoint(q.id for q in held_out)
    assert len(dev) + len(held_out) == len(questions)
    assert Counter(q.kind for q in dev) == Counter(q.kind for q in held_out)


def test_scoring(bench: ModuleType) -> None:
    question = bench.Question(
        id="x-parallel-0",
        kind="parallel",
        text="",
        domain="x",
        calls=[("f", {"city": "Paris", "n": 2}), ("f", {"city": "Rome"})],
    )
    assert bench.right(question, [("f", {"city": " rome "}), ("f", {"city": "PARIS", "n": 2.0})])
    assert not bench.right(question, [("f", {"city": "Paris", "n": 2})])
    assert not bench.right(question, [("f", {"city": "Paris", "n": 3}), ("f", {"city": "Rome"})])
    assert not bench.right(question, [("f", {"city": "Paris", "n": True}), ("f", {"city": "Rome"})])


async def test_a_first_turn_is_read_through_the_agent(bench: ModuleType) -> None:
    tools, questions = bench.load()
    question = next(q for q in questions if q.kind == "parallel")
    (name, arguments), (name2, arguments2) = question.calls[:2]
    turn = call(name, **arguments) + call(name2, **arguments2)
    model = ScriptedModel([turn, "done"])
    free = bench.Mode("off", 0.0)
    read = await bench.first_turn(model, tools[question.domain], question, free)
    assert (bench.right(question, read.calls), read.invalid) == (len(question.calls) == 2, False)
    assert read.cut is False  # a scripted model has no token cap
    bad = ScriptedModel(['<tool_call>{"name": ' + name + "}</tool_call>", "done"])
    assert (await bench.first_turn(bad, tools[question.domain], question, free)).invalid is True


async def test_an_invalid_call_where_none_fits_is_not_an_answer(bench: ModuleType) -> None:
    tools, questions = bench.load()
    question = next(q for q in questions if q.kind == "none")
    bad = ScriptedModel(['<tool_call>{"name": "x"}</tool_call>', "done"])
    tallies = await bench.measure(bad, bench.Mode("off", 0.0), tools, [question])
    assert (tallies["none"].right, tallies["none"].invalid) == (0, 1)


async def test_a_fit_gate_offers_no_tool_to_a_question_none_fits(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `--min-fit`, the agent sees retrieval's fit: a square root asked of a calendar's
    tools (fit about 0.08) is offered none, so the scripted call is refused."""
    monkeypatch.setenv("AGENTRT_CACHE_DIR", str(tmp_path))
    tools, questions = bench.load()
    question = next(q for q in questions if q.id == "calendar-none-0")
    name = tools[question.domain][0].name
    model = ScriptedModel([call(name, date="2025-01-01"), "done"])
    turn = await bench.first_turn(model, tools[question.domain], question, bench.Mode("off", 0.1))
    assert (turn.calls, turn.invalid) == ([], True)
