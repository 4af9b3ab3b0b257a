"""The vm planner: StackVM programs checked before they run, then run over a variable store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from llama_cpp.llama_grammar import json_schema_to_gbnf

from agentrt import (
    Event,
    GuardEvent,
    ModelResponseEvent,
    PlanInvalidEvent,
    PlannerFallbackEvent,
    PlanWarningEvent,
    ToolFinishedEvent,
    ToolStartedEvent,
    VmInstructionEvent,
    Workspace,
)
from agentrt.models.base import for_llama_grammar
from agentrt.planning.vm import THOUGHT_CHARS, program_schema, validate_program
from tests.helpers import MakeAgent, check_stream, last, llama_accepts
from tests.planning.programs import assign, calling, jmp, program, reasoning, verdict


def of(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def run(agent: Any) -> list[Event]:
    events = [e async for e in agent.run("Go", strategy="programmed")]
    check_stream(events)
    return events


class TestProgramSchema:
    """Under a grammar, a `calling` instruction is one of the tools with its own arguments."""

    def test_a_call_has_its_tools_arguments(
        self, workspace: Workspace, small_model_path: Path
    ) -> None:
        schema = program_schema([workspace.tools[n].definition for n in ("add", "echo")])
        validator = Draft202012Validator(schema)
        good = [
            reasoning(),
            calling(1, "add", "sum", a=1, b="${x}"),
            assign(2, final_answer="${sum}"),
        ]
        assert list(validator.iter_errors({"program": good})) == []
        for wrong in (
            calling(1, "add", "sum", ARGUMENT=1),
            calling(1, "add", "sum", a=1),
            calling(1, "echo", "out", a=1, b=2),
            calling(1, "teleport", "out", to="Mars"),
            calling(1, "add", "my sum", a=1, b=2),  # a name no reference can read
        ):
            assert list(validator.iter_errors({"program": [reasoning(), wrong]})), wrong
        long = reasoning(thoughts="x" * (THOUGHT_CHARS + 1))  # cut by a token cap, unbounded
        assert list(validator.iter_errors({"program": [long]}))
        assert list(validator.iter_errors({"program": []}))  # a repair the 1.5B wrote, twice
        grammar = json_schema_to_gbnf(json.dumps(for_llama_grammar(schema)))
        assert llama_accepts(grammar, small_model_path)


class TestValidation:
    def problems(self, workspace: Workspace, *instructions: dict[str, Any]) -> list[str]:
        return validate_program(list(instructions), workspace.tools)[1]

    def test_a_good_program(self, workspace: Workspace) -> None:
        assert (
            self.problems(
                workspace,
                reasoning(),
                calling(1, "vector_search", "docs", query="TiDB"),
                assign(2, final_answer="${docs}"),
            )
            == []
        )

    def test_numbering(self, workspace: Workspace) -> None:
        assert self.problems(workspace, reasoning(), assign(2, final_answer="x")) == [
            "seq_no must run from 0 without gaps (missing: 1)"
        ]
        assert self.problems(
            workspace, reasoning(), assign(1, a=1), assign(1, final_answer="x")
        ) == ["seq_no 1 is used 2 times; each must be unique"]

    def test_each_problem_names_its_seq_no(self, workspace: Workspace) -> None:
        problems = self.problems(
            workspace,
            assign(0, x=1),
            calling(1, "teleport", "out", to="Mars"),
            jmp(2, target_seq=9),
            jmp(3, condition_prompt="Is it?", jump_if_true=4),
            assign(4, y="${x} + 1"),
            assign(5, x="${x}"),
        )
        assert problems[0] == "seq_no 0 must be a 'reasoning' instruction, not 'assign'"
        assert problems[1].startswith("seq_no 1: no tool 'teleport' (the tools are: ")
        assert problems[2:] == [
            "seq_no 2: jump target 9 is not an instruction",
            "seq_no 3: a conditional jmp needs jump_if_true and jump_if_false",
            "seq_no 4: '${x} + 1' computes with a variable; the VM only substitutes: compute it "
            "in a step of its own",
            "seq_no 5: assign reads ${x}, which it also assigns; split it in two",
        ]

    def test_a_variable_read_before_any_path_assigns_it(self, workspace: Workspace) -> None:
        problems = self.problems(
            workspace,
            reasoning(),
            jmp(1, condition_prompt="Skip?", jump_if_true=3, jump_if_false=2),
            calling(2, "vector_search", "docs", query="x"),
            assign(3, final_answer="${docs} ${later}"),
            assign(4, later="too late"),
        )
        # `docs` is assigned on one path to seq_no 3, which is enough; `later` on none.
        assert problems == [
            "seq_no 3 reads ${later}, which no instruction assigns before it",
            "seq_no 4: the last instruction must produce final_answer (assign it, or name it in "
            "output_vars)",
        ]

    def test_a_loop_may_read_what_its_later_steps_assign(self, workspace: Workspace) -> None:
        """Within a loop, a step may read a variable set further down, on the way back."""
        assert (
            self.problems(
                workspace,
                reasoning(),
                assign(1, draft="first"),
                jmp(2, condition_prompt="Good: ${draft}?", jump_if_true=4, jump_if_false=3),
                calling(3, "llm_generate", "draft", prompt="Improve ${draft}"),
                assign(4, final_answer="${draft}"),
            )
            == []
        )


class TestExecution:
    async def test_the_seed_style_research_program(self, make_agent: MakeAgent) -> None:
        """Knowledge-graph and vector search together, summarised by llm_generate into JSON
        keys, then assembled into final_answer: every instruction is an event with its
        writes."""
        agent = make_agent(
            [
                program(
                    reasoning(thoughts="Dual retrieval, then one summary."),
                    calling(1, "retrieve_knowledge_graph", "kg", query="TiDB"),
                    calling(2, "vector_search", "docs", query="TiDB features", top_k=2),
                    calling(
                        3,
                        "llm_generate",
                        ["summary", "insights"],
                        prompt="Summarise as JSON with keys summary and insights.",
                        context="${kg.entities} / ${docs}",
                        response_format="json",
                    ),
                    assign(4, final_answer="${summary} (${insights})"),
                ),
                json.dumps({"summary": "TiDB is distributed", "insights": "scales out"}),
            ]
        )
        events = await run(agent)
        steps = [(e.seq_no, e.instruction, e.writes) for e in of(events, VmInstructionEvent)]
        assert steps[0] == (0, "reasoning", {})
        assert steps[1][:2] == (1, "calling")
        assert steps[1][2]["kg"]["entities"] == ["TiDB", "TiDB component"]
        assert steps[3] == (
            3,
            "calling",
            {"summary": "TiDB is distributed", "insights": "scales out"},
        )
        assert steps[4] == (4, "assign", {"final_answer": "TiDB is distributed (scales out)"})
        asked = [e for e in of(events, ModelResponseEvent) if e.purpose == "llm_generate"]
        assert len(asked) == 1
        prompt = agent.model.requests[1].messages[0].content  # type: ignore[attr-defined]
        assert prompt.endswith(
            'Context:\n["TiDB", "TiDB component"] / ["passage 1 about TiDB features", '
            '"passage 2 about TiDB features"]'
        )
        assert (last(events).status, last(events).answer) == (
            "ok",
            "TiDB is distributed (scales out)",
        )

    async def test_independent_calls_run_together(self, make_agent: MakeAgent, seen: Any) -> None:
        """Consecutive calling steps overlap when they do not depend on each other; a step
        reading another's output waits for it; the store ends as it would sequentially."""
        agent = make_agent(
            [
                program(
                    reasoning(),
                    calling(1, "nap", "a", seconds=0.05, label="a"),
                    calling(2, "nap", "b", seconds=0.05, label="b"),
                    calling(3, "echo", "c", text="${a} then ${b}"),
                    calling(4, "nap", "a", seconds=0.0, label="a2"),
                    assign(5, final_answer="${c} / ${a}"),
                )
            ]
        )
        events = await run(agent)
        assert seen.max_in_flight == 2
        started = {e.call_id: e.seq for e in of(events, ToolStartedEvent)}
        finished = {e.call_id: e.seq for e in of(events, ToolFinishedEvent)}
        assert started["vm2"] < finished["vm1"]
        assert started["vm3"] > max(finished["vm1"], finished["vm2"])
        # vm4 writes `a`, which vm3 reads: it waits, so vm3 saw the first `a`.
        assert started["vm4"] > finished["vm3"]
        assert last(events).answer == "slept 0.05 then slept 0.05 / slept 0.0"

    async def test_conditional_jumps_and_a_loop(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [
                program(
                    reasoning(),
                    assign(1, draft="v1"),
                    jmp(2, condition_prompt="Is ${draft} final?", jump_if_true=4, jump_if_false=3),
                    calling(3, "llm_generate", "draft", prompt="Improve ${draft}"),
                    jmp(4, condition_prompt="Is ${draft} final?", jump_if_true=5, jump_if_false=3),
                    assign(5, final_answer="${draft}"),
                ),
                verdict(False),
                "v2",
                verdict(False),
                "v3",
                verdict(True),
            ]
        )
        events = await run(agent)
        jumps = [
            (e.seq_no, e.jumped_to)
            for e in of(events, VmInstructionEvent)
            if e.instruction == "jmp"
        ]
        assert jumps == [(2, 3), (4, 3), (4, 5)]
        assert [e.call_id for e in of(events, ToolFinishedEvent)] == ["vm3", "vm3.2"]
        assert last(events).answer == "v3"

    async def test_an_endless_loop_ends_on_the_instruction_budget(
        self, make_agent: MakeAgent
    ) -> None:
        agent = make_agent(
            [
                program(
                    reasoning(),
                    jmp(1, target_seq=2),
                    jmp(2, target_seq=1),
                    assign(3, final_answer="never"),
                )
            ]
        )
        events = await run(agent)
        assert len(of(events, VmInstructionEvent)) == 30
        assert last(events).status == "budget_exhausted"

    async def test_a_failed_call_names_its_step(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [
                program(
                    reasoning(),
                    calling(1, "fail", "x", message="index offline"),
                    assign(2, final_answer="${x}"),
                )
            ]
        )
        events = await run(agent)
        assert last(events).status == "error"
        assert last(events).error == "ProgramFailed: seq_no 1 (calling fail) failed: index offline"

    async def test_a_missing_key_in_output_vars(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [
                program(
                    reasoning(),
                    calling(1, "profile", ["name", "age"], name="Ada"),
                    assign(2, final_answer="${age}"),
                )
            ]
        )
        events = await run(agent)
        assert last(events).error == (
            "ProgramFailed: seq_no 1: the result has no key 'age' (it has: name, city, tags)"
        )


class TestCommonErrors:
    async def test_runtime_facts_and_sql_are_flagged(self, make_agent: MakeAgent) -> None:
        """The specification's common errors are warnings: the program still runs."""
        agent = make_agent(
            [
                program(
                    reasoning(),
                    calling(
                        1, "llm_generate", "version", prompt="Determine the current version of TiDB"
                    ),
                    calling(
                        2,
                        "llm_generate",
                        "slow",
                        prompt="Explain: SELECT * FROM INFORMATION_SCHEMA.SLOW_QUERY LIMIT 10;",
                    ),
                    calling(3, "vector_search", "docs", query="How does TiDB store data?"),
                    assign(4, final_answer="${docs}"),
                ),
                "7.5",
                "an explanation",
            ]
        )
        events = await run(agent)
        warnings = [(w.where, w.warning.split(":")[0]) for w in of(events, PlanWarningEvent)]
        assert warnings == [
            ("seq_no 1", "llm_generate knows public documentation only"),
            ("seq_no 2", "llm_generate cannot execute SQL; use a database tool, or the user"),
        ]
        assert last(events).status == "ok"


class TestRepairAndFallback:
    async def test_an_invalid_program_is_repaired(self, make_agent: MakeAgent) -> None:
        agent = make_agent(
            [
                program(assign(0, final_answer="${nothing}")),
                program(reasoning(), assign(1, final_answer="fixed")),
            ]
        )
        events = await run(agent)
        (invalid,) = of(events, PlanInvalidEvent)
        assert invalid.repairing
        assert invalid.problems == ["seq_no 0 must be a 'reasoning' instruction, not 'assign'"]
        repair = agent.model.requests[1].messages[-1].content  # type: ignore[attr-defined]
        assert repair.startswith("Your program cannot run:\n- seq_no 0 must be a 'reasoning'")
        assert last(events).answer == "fixed"
        programs = [r for r in agent.model.requests if r.purpose == "program"]  # type: ignore[attr-defined]
        assert [r.retry for r in programs] == [0, 1]  # the repair is asked as one

    async def test_a_program_that_never_answers_gets_an_answer_step(
        self, make_agent: MakeAgent
    ) -> None:
        """Calls made, final_answer never set (the 1.5B's last step `{"a": "final_answer"}`,
        written again unchanged when sent back): a last llm_generate step answers the
        question over what the calls stored, and the program runs."""
        agent = make_agent(
            [
                program(
                    reasoning(),
                    calling(1, "echo", "first", text="1859"),
                    calling(2, "echo", "second", text="1917"),
                    assign(3, a="final_answer"),
                ),
                "1859",
            ]
        )
        events = await run(agent)
        assert not of(events, PlanInvalidEvent)
        (warning,) = of(events, PlanWarningEvent)
        assert warning.where == "seq_no 4"
        asked = agent.model.requests[-1]  # type: ignore[attr-defined]
        assert asked.purpose == "llm_generate"
        (question,) = [m.content for m in asked.messages if m.role == "user"]
        assert question.startswith("Go\nAnswer from the context: the answer alone.")
        assert json.loads(question.split("Context:\n", 1)[1]) == {
            "first": "1859",
            "second": "1917",
        }
        assert last(events).answer == "1859"

    async def test_falls_back_to_react(self, make_agent: MakeAgent) -> None:
        agent = make_agent(["not a program", "{}", "Plain answer."])
        events = await run(agent)
        assert [e.repairing for e in of(events, PlanInvalidEvent)] == [True, False]
        (fallback,) = of(events, PlannerFallbackEvent)
        assert (fallback.planner, fallback.to) == ("vm", "react")
        assert last(events).answer == "Plain answer."


class TestRepetition:
    async def test_a_looping_program_is_cut_at_a_third_copy(self, make_agent: MakeAgent) -> None:
        """The 1.5B, once it repeats instructions, writes them again until its token cap: the
        program ends before the third copy, the model stops writing there, and the program
        (now without final_answer) is sent back for repair."""
        looping = [assign(i, x="a") if i % 2 else assign(i, y="b") for i in range(1, 20)]
        agent = make_agent(
            [program(reasoning(), *looping), program(reasoning(), assign(1, final_answer="ab"))]
        )
        events = await run(agent)
        (guard,) = of(events, GuardEvent)
        assert (guard.kind, guard.call_id, guard.detail) == (
            "repetition",
            "vm5",
            "seq_no 5 is the third copy of an earlier instruction; the program is cut before it",
        )
        (invalid,) = of(events, PlanInvalidEvent)
        assert invalid.problems == [
            "seq_no 4: the last instruction must produce final_answer (assign it, or name it "
            "in output_vars)"
        ]
        repair = agent.model.requests[1]  # type: ignore[attr-defined]
        (written,) = [m.content for m in repair.messages if m.role == "assistant"]
        assert [i["seq_no"] for i in json.loads(written)["program"]] == [0, 1, 2, 3, 4]
        first = next(e for e in of(events, ModelResponseEvent) if e.purpose == "program")
        assert first.text.count('"assign"') < len(looping)
        assert last(events).answer == "ab"

    async def test_two_branches_may_end_alike(self, make_agent: MakeAgent) -> None:
        """A second copy is not a loop: both branches jump to the same last step."""
        agent = make_agent(
            [
                program(
                    reasoning(),
                    jmp(1, condition_prompt="Is it late?", jump_if_true=2, jump_if_false=4),
                    assign(2, word="night"),
                    jmp(3, target_seq=6),
                    assign(4, word="day"),
                    jmp(5, target_seq=6),
                    assign(6, final_answer="${word}"),
                ),
                verdict(False),
            ]
        )
        events = await run(agent)
        assert not of(events, GuardEvent)
        assert last(events).answer == "day"
