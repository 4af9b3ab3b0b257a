"""The dag planner: plans validated before they run, nodes started as their dependencies finish."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from llama_cpp.llama_grammar import json_schema_to_gbnf

from agentrt import (
    Event,
    GuardEvent,
    ModelResponseEvent,
    NodeSkippedEvent,
    PlanCreatedEvent,
    PlanDecisionEvent,
    PlanInvalidEvent,
    PlannerFallbackEvent,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
    ToolStartedEvent,
    Workspace,
)
from agentrt.models.base import for_llama_grammar
from agentrt.planning.dag import (
    JOIN_ANSWER_CHARS,
    JOIN_REASON_CHARS,
    JOIN_SCHEMA,
    PLAN_TEXT_CHARS,
    plan_levels,
    plan_schema,
    validate_plan,
)
from tests.helpers import MakeAgent, check_stream, last, llama_accepts
from tests.planning.plans import finish, node, plan, replan


def of(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def run(agent: Any, strategy: str = "planned") -> list[Event]:
    events = [e async for e in agent.run("Go", strategy=strategy)]
    check_stream(events)
    return events


class TestPlanSchema:
    """Under a grammar, a node is one of the tools with that tool's own arguments."""

    def schema(self, workspace: Workspace) -> dict[str, Any]:
        return plan_schema([workspace.tools[n].definition for n in ("add", "echo")])

    def test_a_node_has_its_tools_arguments(self, workspace: Workspace) -> None:
        validator = Draft202012Validator(self.schema(workspace))
        good = {
            "plan": "p",
            "nodes": [node("T1", "add", a=1, b=2), node("T2", "echo", ["T1"], text="{T1}!")],
        }
        assert list(validator.iter_errors(good)) == []
        for wrong in (
            node("T1", "add", ARGUMENT=1),  # a placeholder copied from a prompt
            node("T1", "add", a=1),  # a required argument left out
            node("T1", "echo", a=1, b=2),  # another tool's arguments
            node("T1", "teleport", to="Mars"),
        ):
            assert list(validator.iter_errors({"plan": "p", "nodes": [wrong]})), wrong
        assert list(validator.iter_errors({"plan": "p", "nodes": []}))

    def test_the_plans_text_is_bounded(self, workspace: Workspace) -> None:
        """A small model repeated one clause of it until its token cap cut the plan."""
        validator = Draft202012Validator(self.schema(workspace))
        nodes = [node("T1", "add", a=1, b=2)]
        assert not list(validator.iter_errors({"plan": "x" * PLAN_TEXT_CHARS, "nodes": nodes}))
        assert list(validator.iter_errors({"plan": "x" * (PLAN_TEXT_CHARS + 1), "nodes": nodes}))
        # ... and so was the same node, over and over: a plan has at most `dag.max_nodes`.
        many = [node(f"T{i}", "add", a=1, b=2) for i in range(13)]
        assert list(validator.iter_errors({"plan": "p", "nodes": many}))
        assert not list(validator.iter_errors({"plan": "p", "nodes": many[:12]}))

    def test_an_argument_may_be_a_reference_to_a_result(self, workspace: Workspace) -> None:
        validator = Draft202012Validator(self.schema(workspace))
        for a in ("${T1}", "{T1}", "${T1.rows[0].total}"):
            plan_ = {"plan": "p", "nodes": [node("T2", "add", ["T1"], a=a, b=2)]}
            assert list(validator.iter_errors(plan_)) == [], a
        not_a_reference = {"plan": "p", "nodes": [node("T2", "add", a="two", b=2)]}
        assert list(validator.iter_errors(not_a_reference))

    def test_the_embedded_models_grammar_is_built_from_it(
        self, workspace: Workspace, small_model_path: Path
    ) -> None:
        grammar = json_schema_to_gbnf(json.dumps(for_llama_grammar(self.schema(workspace))))
        for name in ("add", "echo"):  # each tool's name, as the only value its node's takes
            assert f'::= "\\"{name}\\""' in grammar, name
        assert llama_accepts(grammar, small_model_path)


def test_the_joiners_grammar_bounds_its_texts(small_model_path: Path) -> None:
    """Under a grammar, the joiner's reason and answer end (a 1.5B looped inside its answer
    until its token cap); from a model not under one, a longer answer is taken."""
    grammar = json_schema_to_gbnf(json.dumps(for_llama_grammar(JOIN_SCHEMA)))
    assert llama_accepts(grammar, small_model_path)
    validator = Draft202012Validator(JOIN_SCHEMA)
    decision = {"reason": "r", "action": "finish", "answer": "x" * JOIN_ANSWER_CHARS}
    assert not list(validator.iter_errors(decision))
    assert list(validator.iter_errors({**decision, "answer": "x" * (JOIN_ANSWER_CHARS + 1)}))
    assert list(validator.iter_errors({**decision, "reason": "x" * (JOIN_REASON_CHARS + 1)}))


class TestValidation:
    def problems(self, workspace: Workspace, *nodes: dict[str, Any]) -> list[str]:
        return validate_plan(list(nodes), workspace.tools)[1]

    def test_a_good_plan(self, workspace: Workspace) -> None:
        nodes, problems = validate_plan(
            [node("T1", "add", a=1, b=2), node("T2", "echo", ["T1"], text="sum: {T1}")],
            workspace.tools,
        )
        assert problems == []
        assert plan_levels(nodes) == [["T1"], ["T2"]]

    def test_each_problem_is_named(self, workspace: Workspace) -> None:
        problems = self.problems(
            workspace,
            node("T1", "add", a=1, b=2),
            node("T1", "echo", text="again"),
            node("T2", "teleport", to="Mars"),
            node("T3", "echo", ["T9"], text="x"),
            node("T4", "add", a="two", b=2),
            node("T5", "echo", ["T1"], text="{T3} and ${T1}"),
            {"id": "T6", "tool": "echo"},
            {"tool": "echo"},
        )
        joined = "\n".join(problems)
        assert "node 8 is malformed: id: Field required" in joined
        assert "node T6: arguments for echo: text: Field required" in joined
        assert "node id 'T1' is used 2 times; ids must be unique" in joined
        assert "node T2: there is no tool 'teleport' (the tools are: " in joined
        assert "node T3 depends on 'T9', which is not a node of the plan" in joined
        assert "node T4: arguments for add: a: Input should be a valid integer" in joined
        assert (
            "node T5 refers to T3 in its args but does not depend on it: add 'T3' to its "
            "depends_on" in joined
        )

    def test_a_cycle_is_named(self, workspace: Workspace) -> None:
        problems = self.problems(
            workspace,
            node("T1", "echo", text="start"),
            node("T2", "echo", ["T1", "T3"], text="{T3}"),
            node("T3", "echo", ["T2"], text="{T2}"),
        )
        assert problems == ["the plan has a cycle: T2 → T3 → T2; a node cannot wait for itself"]

    def test_a_reference_in_args_passes_the_type_check(self, workspace: Workspace) -> None:
        """`{T1}` where an int is expected is checked when it is filled, not before."""
        assert (
            self.problems(
                workspace, node("T1", "add", a=1, b=1), node("T2", "add", ["T1"], a="{T1}", b=1)
            )
            == []
        )


class TestScheduling:
    async def test_a_node_starts_when_its_own_dependencies_finish(
        self, make_agent: MakeAgent
    ) -> None:
        """Slow S and fast F start together; F2 (after F) starts while S still runs: no node
        waits for a whole level. (Timing is the benchmark's business: this test reads order.)"""
        agent = make_agent(
            [
                plan(
                    node("S", "nap", seconds=0.3, label="slow"),
                    node("F", "nap", seconds=0.0, label="fast"),
                    node("F2", "nap", ["F"], seconds=0.0, label="after-fast"),
                    node("S2", "echo", ["S", "F2"], text="{S} / {F2}"),
                ),
                finish("done"),
            ]
        )
        events = await run(agent)
        started = {e.call_id: e.seq for e in of(events, ToolStartedEvent)}
        finished = {e.call_id: e.seq for e in of(events, ToolFinishedEvent)}
        assert started["F2"] < finished["S"]
        assert started["S2"] > finished["S"]
        (created,) = of(events, PlanCreatedEvent)
        assert created.levels == [["F", "S"], ["F2"], ["S2"]]
        calls = {e.call_id: e for e in of(events, ToolCallEvent)}
        assert calls["S2"].depends_on == ["S", "F2"]
        assert calls["S2"].arguments == {"text": "slept 0.3 / slept 0.0"}
        assert (last(events).status, last(events).answer) == ("ok", "done")

    async def test_nodes_start_while_the_plan_streams(self, make_agent: MakeAgent) -> None:
        """With a slowly streamed plan, the first node starts before the model has finished
        writing the rest of the plan."""
        long_tail = [node(f"N{i}", "echo", text=f"word {i} " * 5) for i in range(6)]
        agent = make_agent(
            [plan(node("T1", "add", a=1, b=2), *long_tail), finish("3")], token_delay=0.003
        )
        events = await run(agent)
        t1 = next(e for e in of(events, ToolStartedEvent) if e.call_id == "T1")
        plan_written = next(e for e in of(events, ModelResponseEvent) if e.purpose == "plan")
        assert t1.seq < plan_written.seq

    async def test_the_plan_text_is_kept_and_never_run(self, make_agent: MakeAgent) -> None:
        """A <plan> block before the JSON (from a model not bound to the schema) is kept."""
        text = "<plan>\nT1: add. Dependencies: none\n</plan>\n```json\n"
        agent = make_agent([text + plan(node("T1", "add", a=2, b=2)) + "\n```", finish("4")])
        events = await run(agent)
        (created,) = of(events, PlanCreatedEvent)
        assert created.text == "T1: add. Dependencies: none"
        assert [e.name for e in of(events, ToolCallEvent)] == ["add"]


class TestRepetition:
    async def test_a_plan_is_cut_at_a_repeated_node(self, make_agent: MakeAgent) -> None:
        """The 1.5B, once it repeats a node, writes it until the node cap: the plan ends
        before the first repeat, which is not run, and the model stops writing there."""
        looping = [node(f"T{i}", "echo", text="a") for i in range(3, 10)]
        agent = make_agent(
            [
                plan(node("T1", "echo", text="a"), node("T2", "echo", text="b"), *looping),
                finish("ab"),
            ]
        )
        events = await run(agent)
        (guard,) = [e for e in of(events, GuardEvent) if e.kind == "repetition"]
        assert (guard.call_id, guard.detail) == (
            "T3",
            "node 3 of the plan repeats node 1 (echo with the same arguments); "
            "the plan is cut before it",
        )
        (created,) = of(events, PlanCreatedEvent)
        assert [n.id for n in created.nodes] == ["T1", "T2"]
        assert [e.call_id for e in of(events, ToolCallEvent)] == ["T1", "T2"]
        # The conversation holds the plan as it ran, and the stream was not read to its end.
        join = agent.model.requests[-1]  # type: ignore[attr-defined]
        (written,) = [m.content for m in join.messages if m.role == "assistant"]
        assert [n["id"] for n in json.loads(written)["nodes"]] == ["T1", "T2"]
        response = next(e for e in of(events, ModelResponseEvent) if e.purpose == "plan")
        assert response.text.count('"echo"') < len(looping) + 2

    async def test_a_node_repeated_with_other_dependencies_is_cut_too(
        self, make_agent: MakeAgent
    ) -> None:
        """Chained repeats (T3 after T2, T4 after T3, … all one search) are the same loop."""
        agent = make_agent(
            [
                plan(
                    node("T1", "search", query="x"),
                    node("T2", "search", ["T1"], query="x"),
                    node("T3", "search", ["T2"], query="x"),
                ),
                finish("x"),
            ]
        )
        events = await run(agent)
        assert [e.call_id for e in of(events, ToolCallEvent)] == ["T1"]
        assert last(events).answer == "x"

    async def test_malformed_nodes_are_not_taken_for_repeats(self, make_agent: MakeAgent) -> None:
        """Two nodes of one tool whose arguments are not objects differ: the whole-plan check
        names both, the plan is not cut."""
        broken = json.dumps(
            {"plan": "", "nodes": [{**node(i, "echo"), "args": i} for i in ("A", "B")]}
        )
        agent = make_agent([broken, plan(node("T1", "echo", text="a")), finish("a")])
        events = await run(agent)
        assert not [e for e in of(events, GuardEvent) if e.kind == "repetition"]
        (invalid,) = of(events, PlanInvalidEvent)
        assert [p.split(" is ")[0] for p in invalid.problems] == ["node 1", "node 2"]


class TestReferences:
    async def test_fields_are_read_from_results(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [
                plan(
                    node("P", "profile", name="Ada"),
                    node(
                        "E", "echo", ["P"], text="${P.name} lives in ${P.city.name} (${P.tags[1]})"
                    ),
                    node("A", "add", ["P"], a="${P.city.population}", b=1),
                ),
                finish("ok"),
            ]
        )
        events = await run(agent)
        outputs = {e.call_id: e.output for e in of(events, ToolFinishedEvent)}
        assert outputs["E"] == "Ada lives in Adaville (b)"
        assert outputs["A"] == 1201

    async def test_a_missing_field_fails_that_node_only(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [
                plan(
                    node("P", "profile", name="Ada"),
                    node("E", "echo", ["P"], text="${P.age}"),
                    node("D", "echo", ["E"], text="{E}"),
                    node("O", "add", a=1, b=1),
                ),
                finish("partial"),
            ]
        )
        events = await run(agent)
        (invalid,) = of(events, ToolCallInvalidEvent)
        assert invalid.call_id == "E"
        assert invalid.reason == "node E: P has no field 'age' (it has: name, city, tags)"
        (skipped,) = of(events, NodeSkippedEvent)
        assert (skipped.node, skipped.reason) == ("D", "it depends on E (failed)")
        assert {e.call_id for e in of(events, ToolFinishedEvent)} == {"P", "O"}
        assert last(events).status == "ok"


class TestFailures:
    async def test_skip_dependants_transitively(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [
                plan(
                    node("F", "fail", message="no data"),
                    node("A", "echo", ["F"], text="{F}"),
                    node("B", "echo", ["A"], text="{A}"),
                ),
                finish("nothing"),
            ]
        )
        events = await run(agent)
        assert [(e.node, e.reason) for e in of(events, NodeSkippedEvent)] == [
            ("A", "it depends on F (failed)"),
            ("B", "it depends on A (skipped)"),
        ]

    async def test_retry_runs_the_node_again(self, make_agent: MakeAgent) -> None:
        """With on_failure: retry, a failed node runs again, fresh (not from the cache)."""
        agent = make_agent([plan(node("F", "fail", message="flaky")), finish("gave up")])
        events = await run(agent, "planned_retry")
        assert [e.call_id for e in of(events, ToolFinishedEvent)] == ["F", "F.retry1", "F.retry2"]
        assert not [e for e in of(events, ToolFinishedEvent) if e.cached]

    async def test_replan_after_a_failure(self, make_agent: MakeAgent) -> None:
        """With on_failure: replan, the run plans again with the failure in the prompt."""
        agent = make_agent(
            [
                plan(node("F", "fail", message="index offline")),
                plan(node("A", "add", a=1, b=1)),
                finish("2"),
            ]
        )
        events = await run(agent, "planned_replan")
        second_plan_request = agent.model.requests[1]  # type: ignore[attr-defined]
        assert "Error: index offline" in second_plan_request.messages[-1].content
        assert [e.call_id for e in of(events, ToolFinishedEvent)] == ["F", "A@2"]
        assert last(events).answer == "2"


class TestRepairAndFallback:
    async def test_an_invalid_plan_is_repaired(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [
                plan(node("T1", "teleport", to="Mars")),
                plan(node("T1", "add", a=1, b=1)),
                finish("2"),
            ]
        )
        events = await run(agent)
        (invalid,) = of(events, PlanInvalidEvent)
        assert invalid.repairing
        assert invalid.problems[0].startswith("node T1: there is no tool 'teleport'")
        repair = agent.model.requests[1].messages[-1].content  # type: ignore[attr-defined]
        assert repair.startswith("Your plan cannot run:\n- node T1: there is no tool 'teleport'")
        assert [e.call_id for e in of(events, ToolFinishedEvent)] == ["T1@2"]
        # The repair is asked as one: a greedy backend samples it differently.
        plans = [r for r in agent.model.requests if r.purpose == "plan"]  # type: ignore[attr-defined]
        assert [r.retry for r in plans] == [0, 1]

    async def test_falls_back_to_react_when_no_plan_parses(self, make_agent: MakeAgent) -> None:
        agent = make_agent(["I think we should add.", "Still prose.", "The answer is 2."])
        events = await run(agent)
        assert [e.problems for e in of(events, PlanInvalidEvent)] == [
            ["the answer holds no JSON object with the plan's nodes"]
        ] * 2
        (fallback,) = of(events, PlannerFallbackEvent)
        assert (fallback.planner, fallback.to) == ("dag", "react")
        assert (last(events).status, last(events).answer) == ("ok", "The answer is 2.")


class TestJoiner:
    async def test_replan_when_results_are_not_enough(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [
                plan(node("A", "add", a=1, b=1)),
                replan("the question also asks for 3 + 3"),
                plan(node("A", "add", a=1, b=1), node("B", "add", a=3, b=3)),
                finish("2 and 6"),
            ]
        )
        events = await run(agent)
        assert [(d.action, d.reason) for d in of(events, PlanDecisionEvent)] == [
            ("replan", "the question also asks for 3 + 3"),
            ("finish", "the results answer it"),
        ]
        cached = {e.call_id: e.cached for e in of(events, ToolFinishedEvent)}
        assert cached == {"A": False, "A@2": True, "B@2": False}
        assert last(events).answer == "2 and 6"

    async def test_asked_in_the_plans_conversation(self, make_agent: MakeAgent) -> None:
        """The joiner is asked after the plan, in its conversation (a local model reuses what it
        computed for both), and a plan made next reads the results there, not again."""
        first = plan(node("A", "add", a=1, b=1))
        agent = make_agent(
            [first, replan("also 3 + 3"), plan(node("B", "add", a=3, b=3)), finish("2 and 6")]
        )
        await run(agent)
        plan1, join1, plan2, _ = agent.model.requests  # type: ignore[attr-defined]
        assert join1.messages[: len(plan1.messages)] == plan1.messages
        assert join1.messages[len(plan1.messages)].content == first
        assert "- A add" in join1.messages[-1].content
        assert plan2.messages[: len(join1.messages)] == join1.messages
        assert json.loads(plan2.messages[-2].content)["reason"] == "also 3 + 3"
        assert "also 3 + 3" in plan2.messages[-1].content
        assert "- A add" not in plan2.messages[-1].content
        # Planned again, it is sampled apart: greedy, the 1.5B wrote the same plan again.
        assert (plan1.retry, plan2.retry) == (0, 1)

    async def test_a_result_seen_before_is_named_not_repeated(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [plan(node("A", "add", a=1, b=1), node("B", "add", a=2, b=0)), finish("2")]
        )
        await run(agent)
        results = agent.model.requests[-1].messages[-1].content  # type: ignore[attr-defined]
        assert "- A add" in results
        assert '- B add {"a": 2, "b": 0} → ok: the same as A\'s' in results

    async def test_out_of_replans(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [
                plan(node("A", "add", a=1, b=1)),
                replan("more"),
                plan(node("B", "add", a=2, b=2)),
                replan("more"),
            ]
        )
        events = await run(agent)
        assert last(events).status == "budget_exhausted"


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        ('{"plan": "", "nodes": [{"id": "T1"', "the plan is not valid JSON: "),
        ("[1, 2]", "the answer holds no JSON object with the plan's nodes"),
    ],
)
def test_parse_problems_are_reported(broken: str, message: str) -> None:
    """Malformed plans are a problem named for the model, never an exception of the run."""
    from agentrt.parsing.plans import PlanStreamParser

    parser = PlanStreamParser()
    parser.feed(broken)
    with pytest.raises(ValueError, match=message):
        parser.finish()


def test_a_cut_plan_parses() -> None:
    """Cut after its first nodes (a repeat arrived), a plan in a code fence, its `plan` text
    first, parses as those nodes with its text."""
    from agentrt.parsing.plans import PlanStreamParser

    parser = PlanStreamParser()
    whole = plan(node("A", "add", a=1, b=1), node("B", "add", a=2, b=2), text="two sums")
    parser.feed("```json\n")
    fed = [n for i in range(0, len(whole), 7) for n in parser.feed(whole[i : i + 7])]
    assert [n["id"] for n in fed] == ["A", "B"]
    parser.cut(1)
    text, obj = parser.finish()
    assert (text, [n["id"] for n in obj["nodes"]]) == ("two sums", ["A"])


class TestGolden:
    async def test_the_gap_paper_example(self, make_agent: MakeAgent) -> None:
        """The GAP paper's graph: two capitals looked up in parallel, then each population,
        each waiting only for its own capital."""
        agent = make_agent(
            [
                "<plan>\nT1: capital of France. Dependencies: none\n"
                "T2: capital of Germany. Dependencies: none\n"
                "T3: population of T1's answer. Dependencies: T1\n"
                "T4: population of T2's answer. Dependencies: T2\n</plan>\n"
                + plan(
                    node("s1", "search", query="capital of France"),
                    node("s2", "search", query="capital of Germany"),
                    node("s3", "search", ["s1"], query="population of {s1}"),
                    node("s4", "search", ["s2"], query="population of {s2}"),
                ),
                finish("Paris and Berlin, with their populations"),
            ]
        )
        events = await run(agent)
        (created,) = of(events, PlanCreatedEvent)
        assert created.levels == [["s1", "s2"], ["s3", "s4"]]
        assert created.text.startswith("T1: capital of France. Dependencies: none")
        queries = {e.call_id: e.arguments["query"] for e in of(events, ToolCallEvent)}
        assert queries == {
            "s1": "capital of France",
            "s2": "capital of Germany",
            "s3": "population of results for capital of France",
            "s4": "population of results for capital of Germany",
        }
        join_request = agent.model.requests[-1]  # type: ignore[attr-defined]
        assert "- s4 search" in join_request.messages[-1].content
        assert last(events).answer == "Paris and Berlin, with their populations"
