"""Internal. The `dag` planner: the model writes a graph of tool calls; each node runs the moment
its own dependencies have finished — never waiting for a whole level.

    plan (JSON schema) ─► nodes start while the plan streams, once their dependencies are done
       │                  (each checked as it arrives; the whole plan checked at its end)
       ├─ invalid ─► plan_invalid ─► repair request ─► plan again, `repairs` times ─► react
       ▼
    results ─► joiner (one model call, JSON): finish with the answer, or plan again (`replans`)

A failed node, per the strategy's `dag.on_failure`: is run again (`retries` times), or its
dependants are skipped (`node_skipped`), or they are skipped and the run plans again with the
failure in the prompt. Nodes that started before their plan was found invalid are cancelled if
still running; a repaired plan that repeats one gets its result from the run's cache.

With `dag.approve_plan`, no node starts while the plan streams: a valid plan is held for a
person (the run ends `needs_approval`, its nodes listed), and runs once every node is approved
(`agent.resume`), or is planned again when one is rejected, the reason in the prompt.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agentrt._validation import describe_errors
from agentrt.events import (
    Approve,
    GuardEvent,
    NodeSkippedEvent,
    PendingCall,
    PlanCreatedEvent,
    PlanDecisionEvent,
    PlanInvalidEvent,
    PlannerFallbackEvent,
    PlanNode,
    ToolCallInvalidEvent,
    Usage,
)
from agentrt.exceptions import ModelError
from agentrt.execution import ToolOutcome
from agentrt.models.base import Message, ModelRequest, TextChunk, ToolDefinition, UsageChunk
from agentrt.parsing.answers import JSONProblem
from agentrt.parsing.plans import PlanStreamParser
from agentrt.planning.base import PlannerInput, PlannerResult
from agentrt.planning.kernel import Invalid, Kernel, plan_tools
from agentrt.planning.react import run_react
from agentrt.planning.references import Unresolved, referable, references, resolve
from agentrt.strategy import DagStrategy
from agentrt.tool import Tool

__all__ = ["plan_levels", "plan_schema", "run_dag", "validate_plan"]


async def run_dag(task: PlannerInput, strategy: DagStrategy) -> PlannerResult:
    dag = _Dag(task, strategy)
    return await dag.kernel.run(dag.run)


PLAN_TEXT_CHARS = 300
"""The longest `plan` text a grammar lets a model write: the 1.5B, unbounded, repeated one
clause ("T7 searches for the town where …; T8 searches for …") until its token cap cut the
plan, and asked to repair it, did so again (issue 24). At 600 it still filled all 600 with one
clause, a third of a plan of 1,914 characters (602 tokens, 114 s on 2 cores), where another
plan's text took 91 (two searches and a comparison)."""


def plan_schema(tools: Sequence[ToolDefinition], max_nodes: int = 12) -> dict[str, Any]:
    """The JSON schema plans are asked for under. `plan` comes first: the human-readable
    plan, written before the nodes as the model thinks it through.

    A node is one of the tools with that tool's own arguments (`referable`: each may be a
    reference to another node's result): under a grammar, a small model cannot invent an
    argument's name or leave out a required one, which it did with the outer shape alone
    (copying a placeholder `"ARGUMENT"` from the prompt, issue 24)."""
    nodes = [_node({"type": "string", "enum": [t.name]}, referable(t.parameters)) for t in tools]
    node = nodes[0] if len(nodes) == 1 else {"anyOf": nodes} if nodes else _node({}, {})
    return {
        "type": "object",
        "properties": {
            "plan": {"type": "string", "maxLength": PLAN_TEXT_CHARS},
            # At least one node: an empty plan is refused, as an empty program is (`vm`).
            "nodes": {"type": "array", "items": node, "minItems": 1, "maxItems": max_nodes},
        },
        "required": ["plan", "nodes"],
        "additionalProperties": False,
    }


def _node(tool: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "tool": tool or {"type": "string"},
            "args": args or {"type": "object"},
            "depends_on": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["id", "tool", "args", "depends_on"],
        "additionalProperties": False,
    }


class _Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The reason first: a model under this schema's grammar writes what the results state
    # before it decides (the 1.5B, asked for the answer first, named the later of two
    # founding years it then quoted right in its reason; issue 24).
    reason: str
    action: Literal["finish", "replan"]
    answer: str


JOIN_REASON_CHARS = 400
JOIN_ANSWER_CHARS = 1000
"""At 1,500, llama.cpp's parser refuses the grammar llama-cpp-python writes (a nested rule per
character), and the model would sample with none."""


def _join_schema() -> dict[str, Any]:
    """The joiner's schema, its texts bounded for a grammar (as a plan's text is): the 1.5B
    wrote "The T1 search result indicates that" over and over in its answer until its token
    cap, five minutes of a 2-core machine, and the cut answer did not parse (issue 24). Only
    the grammar bounds them: a longer answer from a model not under one is taken."""
    schema = _Decision.model_json_schema()
    schema["properties"]["reason"]["maxLength"] = JOIN_REASON_CHARS
    schema["properties"]["answer"]["maxLength"] = JOIN_ANSWER_CHARS
    return schema


JOIN_SCHEMA = _join_schema()


def validate_plan(
    raw: Sequence[Any], tools: Mapping[str, Tool]
) -> tuple[list[PlanNode], list[str]]:
    """The plan's nodes, and every problem that keeps it from running (empty when none):
    malformed nodes, duplicate ids, unknown tools or dependencies, a cycle (named), arguments
    that fail the tool's schema, references to nodes that are not dependencies."""
    nodes: list[PlanNode] = []
    problems: list[str] = []
    for position, item in enumerate(raw, start=1):
        try:
            nodes.append(PlanNode.model_validate(item))
        except ValidationError as exc:
            problems.append(
                f"node {position} is malformed: {describe_errors(exc, root='value', quote=False)}"
            )
    if not raw:
        problems.append("the plan has no nodes")
    for node_id, count in Counter(n.id for n in nodes).items():
        if count > 1:
            problems.append(f"node id {node_id!r} is used {count} times; ids must be unique")
    ids = {n.id for n in nodes}
    for node in nodes:
        problems += node_problems(node, tools, ids)
    cycle = _find_cycle(nodes)
    if cycle:
        problems.append(f"the plan has a cycle: {' → '.join(cycle)}; a node cannot wait for itself")
    return nodes, problems


def node_problems(node: PlanNode, tools: Mapping[str, Tool], ids: set[str] | None) -> list[str]:
    """What is wrong with one node. With `ids` None (the plan is still streaming) unknown
    dependencies are not judged yet."""
    problems: list[str] = []
    tool = tools.get(node.tool)
    if tool is None:
        problems.append(
            f"node {node.id}: there is no tool {node.tool!r} (the tools are: {', '.join(tools)})"
        )
    if ids is not None:
        problems += [
            f"node {node.id} depends on {dep!r}, which is not a node of the plan"
            for dep in node.depends_on
            if dep not in ids
        ]
    if node.id in node.depends_on:
        problems.append(f"node {node.id} depends on itself")
    known = set(node.depends_on) | (ids or set())
    referred = references(node.args, known)
    for name in sorted(referred - set(node.depends_on)):
        problems.append(
            f"node {node.id} refers to {name} in its args but does not depend on it: "
            f"add {name!r} to its depends_on"
        )
    if tool is not None:
        literal = {k: v for k, v in node.args.items() if not references(v, known)}
        try:
            tool.args_model.model_validate(literal)
        except ValidationError as exc:
            errors = [
                e
                for e in exc.errors()
                if not (e["type"] == "missing" and e["loc"] and e["loc"][0] in node.args)
            ]
            if errors:
                problems.append(f"node {node.id}: arguments for {tool.name}: {_describe(errors)}")
    return problems


def plan_levels(nodes: Sequence[PlanNode]) -> list[list[str]]:
    """Node ids by topological level (Kahn): level 0 depends on nothing, level n on earlier."""
    waiting = {n.id: set(n.depends_on) for n in nodes}
    levels: list[list[str]] = []
    done: set[str] = set()
    while waiting:
        ready = sorted(i for i, deps in waiting.items() if deps <= done)
        if not ready:
            break
        levels.append(ready)
        done.update(ready)
        for i in ready:
            del waiting[i]
    return levels


def _find_cycle(nodes: Sequence[PlanNode]) -> list[str]:
    """One cycle among the nodes' dependencies, as a path that returns to its start; [] if none."""
    graph = {n.id: n.depends_on for n in nodes}
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for dep in graph.get(node, []):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep in graph and dep not in state and (found := visit(dep)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in graph:
        if node not in state and (found := visit(node)):
            return found
    return []


@dataclass(slots=True)
class _NodeRun:
    node: PlanNode | None
    """None until the node streams in (something already waits for it)."""
    call_id: str
    done: asyncio.Event = field(default_factory=asyncio.Event)
    outcome: ToolOutcome | None = None
    status: Literal["ok", "failed", "skipped"] | None = None


@dataclass(slots=True)
class _Attempt:
    raw: str = ""
    text: str = ""
    problems: list[str] = field(default_factory=list)
    runs: dict[str, _NodeRun] = field(default_factory=dict)
    rejected: str | None = None
    """Why a person rejected the plan (`approve_plan`): the model plans again."""
    written: list[str] = field(default_factory=list)
    """Each node streamed in so far, as its tool and arguments (`_repeats`)."""

    @property
    def failed(self) -> list[_NodeRun]:
        return [r for r in self.runs.values() if r.status == "failed"]


class _Dag:
    def __init__(self, task: PlannerInput, strategy: DagStrategy) -> None:
        self.task = task
        self.ctx = task.ctx
        self.kernel = Kernel(task)
        self.strategy = strategy
        self.policy = strategy.dag
        self.tools = plan_tools(task)
        definitions = [t.definition for t in self.tools.values()]
        self.schema = plan_schema(definitions, strategy.dag.max_nodes)
        self.messages = self.kernel.opening(task.prompt("dag.j2", definitions))
        self._definitions: list[ToolDefinition] = definitions

    async def run(self) -> PlannerResult:
        repairs = replans = 0
        kernel = self.kernel
        while (attempt := kernel.next_step()) is not None:
            # A plan after one that did not answer is sampled apart too: at temperature 0 the
            # 1.5B wrote the plan whose results had not answered again, byte for byte, three
            # times over (issue 24).
            attempt_plan = functools.partial(self._attempt, attempt, retry=repairs + replans)
            plan = await kernel.turn(attempt, attempt_plan)
            self.messages.append(Message(role="assistant", content=plan.raw))
            if plan.rejected is not None:
                self._follow_up("dag_replan.j2", reason=plan.rejected, results=[])
                continue
            if plan.problems:
                repairing = repairs < self.policy.repairs and kernel.budget_left
                self.ctx.emit(
                    PlanInvalidEvent, attempt=attempt, problems=plan.problems, repairing=repairing
                )
                if not repairing and kernel.tokens_spent:
                    return kernel.result("budget_exhausted")
                if not repairing:
                    reason = f"no valid plan after {attempt} attempt(s): {plan.problems[0]}"
                    return await self._fall_back(reason)
                repairs += 1
                self._follow_up("dag_repair.j2", problems=plan.problems)
                continue
            if plan.failed and self.policy.on_failure == "replan" and replans < self.policy.replans:
                replans += 1
                self._follow_up(
                    "dag_replan.j2", reason="some nodes failed", results=self._results(plan)
                )
                continue
            decision = await self._join(attempt, plan)
            if decision.action == "finish":
                return kernel.result("ok", decision.answer)
            if replans >= self.policy.replans:
                return kernel.result("budget_exhausted")
            replans += 1
            # The results are in the conversation already, in the joiner's prompt.
            self._follow_up("dag_replan.j2", reason=decision.reason, results=[])
        return kernel.result("budget_exhausted")

    def _follow_up(self, template: str, **variables: Any) -> None:
        """The next user message of the plan's conversation, after the model's last answer."""
        content = self.task.prompt(template, self._definitions, **variables)
        self.messages.append(Message(role="user", content=content))

    async def _attempt(self, attempt: int, *, retry: int) -> _Attempt:
        """Stream one plan and run its nodes as they arrive; validate it whole at its end.

        :param retry: plans sent back so far, for repair or to plan again (`ModelRequest.retry`)
        """
        ctx = self.ctx
        plan = _Attempt()
        parser = PlanStreamParser()
        request = ModelRequest(
            messages=self.messages, json_schema=self.schema, purpose="plan", retry=retry
        )
        usage = Usage()
        started = time.perf_counter()
        failure: Exception | None = None
        async with asyncio.TaskGroup() as tg:
            tasks: list[asyncio.Task[None]] = []

            def start(run: _NodeRun) -> None:
                tasks.append(tg.create_task(self._run_node(attempt, plan, run)))

            stream = ctx.stream(request, step=attempt)
            try:
                async for chunk in stream:
                    if isinstance(chunk, UsageChunk):
                        usage = chunk.usage
                    elif isinstance(chunk, TextChunk) and self._read(
                        attempt, plan, parser, chunk.text, start
                    ):
                        # Cut off mid-plan, the model sends no usage: count what it wrote.
                        usage = Usage(completion_tokens=len(stream.raw))
                        break
            except Exception as exc:
                failure = exc
            else:
                plan.raw = parser.text
                ctx.record_model_response(
                    stream,
                    tool_calls=[],
                    usage=usage,
                    duration=time.perf_counter() - started,
                )
                self._check_whole(attempt, plan, parser)
                if self.policy.approve_plan and not plan.problems and self._approved(plan):
                    for run in plan.runs.values():
                        start(run)
            finally:
                # A plan cut at a repeated node stops its model call here.
                await stream.aclose()
            if failure is not None or plan.problems:
                # A plan that will not run as a whole: stop what it started.
                for t in tasks:
                    t.cancel()
        if failure is not None:
            raise failure
        return plan

    def _approved(self, plan: _Attempt) -> bool:
        """Whether a person approved the whole (valid) plan: every node approved. One node
        rejected rejects the plan (`plan.rejected`); undecided, the plan is held."""
        decisions = self.task.executor.decisions
        verdicts = {r.call_id: decisions.get(r.call_id) for r in plan.runs.values()}
        reasons = [
            d.reason for d in verdicts.values() if d is not None and not isinstance(d, Approve)
        ]
        if reasons:
            plan.rejected = "a person rejected the plan: " + "; ".join(reasons)
            return False
        if all(verdicts.values()):
            return True
        return self.kernel.hold(
            [
                PendingCall(
                    call_id=r.call_id,
                    tool=r.node.tool,
                    arguments=r.node.args,
                    step=self.kernel.steps,
                    node=r.node.id,
                )
                for r in plan.runs.values()
                if r.node is not None
            ]
        )

    def _read(
        self,
        attempt: int,
        plan: _Attempt,
        parser: PlanStreamParser,
        text: str,
        start: Callable[[_NodeRun], None],
    ) -> bool:
        """Admit the nodes `text` completes, `start` each unless a person approves the plan
        first; True when the plan is cut at a repeated node."""
        for raw in parser.feed(text):
            if self._repeats(attempt, raw, plan.written):
                parser.cut(len(plan.written))
                return True
            run = self._admit(attempt, plan, raw)
            if run is not None and not self.policy.approve_plan:
                start(run)
        return False

    def _repeats(self, attempt: int, raw: dict[str, Any], written: list[str]) -> bool:
        """Whether a node that streamed in calls the same tool with the same arguments as an
        earlier node of its plan (whose result the run's cache would give it); else it joins
        `written`. The 1.5B, once it repeats a node, writes it again until the node cap: a
        dozen identical searches, a minute of tokens (issue 24). The plan is cut before it
        (guard `repetition`), as a turn is that repeats a call."""
        identity = json.dumps([raw.get("tool"), raw.get("args")], sort_keys=True)
        if identity not in written:
            written.append(identity)
            return False
        first = written.index(identity) + 1
        self.ctx.emit(
            GuardEvent,
            step=attempt,
            call_id=self._call_id(attempt, str(raw.get("id", len(written) + 1))),
            kind="repetition",
            detail=f"node {len(written) + 1} of the plan repeats node {first} "
            f"({raw.get('tool')} with the same arguments); the plan is cut before it",
        )
        return True

    def _admit(self, attempt: int, plan: _Attempt, raw: dict[str, Any]) -> _NodeRun | None:
        """A node just streamed in: start it (it waits for its dependencies) unless it is
        wrong on its own; the whole-plan check reports what is wrong."""
        try:
            node = PlanNode.model_validate(raw)
        except ValidationError:
            return None
        run = plan.runs.get(node.id)
        if (run is not None and run.node is not None) or node_problems(node, self.tools, None):
            return None
        if run is None:
            run = plan.runs[node.id] = _NodeRun(node, self._call_id(attempt, node.id))
        run.node = node  # a placeholder keeps its `done`, which dependants already wait on
        return run

    def _check_whole(self, attempt: int, plan: _Attempt, parser: PlanStreamParser) -> None:
        try:
            plan.text, whole = parser.finish()
        except JSONProblem as exc:
            plan.problems = [str(exc)]
            return
        raw_nodes = whole.get("nodes")
        if not isinstance(raw_nodes, list):
            plan.problems = ['the plan has no "nodes" list']
            return
        nodes, plan.problems = validate_plan(raw_nodes, self.tools)
        if plan.problems:
            return
        # Every node was admitted while streaming (each is fine alone); the order is the plan's.
        plan.runs = {n.id: plan.runs[n.id] for n in nodes}
        self.ctx.emit(
            PlanCreatedEvent,
            attempt=attempt,
            nodes=nodes,
            levels=plan_levels(nodes),
            text=plan.text,
        )

    async def _run_node(self, attempt: int, plan: _Attempt, run: _NodeRun) -> None:
        node = run.node
        assert node is not None
        try:
            for dep in node.depends_on:
                await self._done(attempt, plan, dep).wait()
            blocked = [d for d in node.depends_on if plan.runs[d].status != "ok"]
            if blocked:
                reasons = ", ".join(f"{d} ({plan.runs[d].status})" for d in blocked)
                run.status = "skipped"
                self.ctx.emit(
                    NodeSkippedEvent,
                    call_id=run.call_id,
                    node=node.id,
                    reason=f"it depends on {reasons}",
                )
                return
            run.outcome = await self._call(attempt, plan, run)
            retries = self.policy.retries if self.policy.on_failure == "retry" else 0
            for again in range(1, retries + 1):
                if run.outcome.status == "ok":
                    break
                run.outcome = await self._call(attempt, plan, run, again)
            run.status = "ok" if run.outcome.status == "ok" else "failed"
        finally:
            if run.status is None:
                run.status = "failed"
            run.done.set()

    def _done(self, attempt: int, plan: _Attempt, node_id: str) -> asyncio.Event:
        # A dependency may stream in after its dependant: wait for it by id.
        run = plan.runs.get(node_id)
        if run is None:
            run = plan.runs[node_id] = _NodeRun(None, self._call_id(attempt, node_id))
        return run.done

    async def _call(
        self, attempt: int, plan: _Attempt, run: _NodeRun, again: int = 0
    ) -> ToolOutcome:
        node = run.node
        assert node is not None
        call_id = run.call_id if not again else f"{run.call_id}.retry{again}"
        depends_on = [plan.runs[d].call_id for d in node.depends_on]

        def result(name: str) -> Any:
            outcome = plan.runs[name].outcome
            if outcome is None:
                raise KeyError(name)
            return outcome.output

        args = resolve(node.args, result, set(node.depends_on))
        if isinstance(args, Unresolved):
            reason = f"node {node.id}: {args.problem}"
            self.ctx.emit(
                ToolCallInvalidEvent,
                step=attempt,
                call_id=call_id,
                name=node.tool,
                raw=json.dumps(node.args),
                reason=reason,
            )
            return ToolOutcome(call_id, node.tool, None, f"Error: {reason}", error=reason)
        return await self.kernel.call_tool(
            node.tool,
            args,
            raw=json.dumps(node.model_dump()),
            step=attempt,
            call_id=call_id,
            depends_on=depends_on,
            fresh=bool(again),
        )

    def _call_id(self, attempt: int, node_id: str) -> str:
        # The first plan's node ids are the call ids; later plans' are marked with the attempt.
        return node_id if attempt <= 1 else f"{node_id}@{attempt}"

    def _results(self, plan: _Attempt) -> list[dict[str, Any]]:
        """Each node's call and result, for the model; a result an earlier node had is named,
        not shown again (two searches worded apart often find the same paragraphs)."""
        first: dict[str, str] = {}
        results = []
        for r in plan.runs.values():
            if r.node is None:
                continue
            observation = r.outcome.observation if r.outcome is not None else ""
            seen = first.setdefault(observation, r.node.id) if observation else r.node.id
            results.append(
                {
                    "id": r.node.id,
                    "tool": r.node.tool,
                    "args": r.node.args,
                    "status": r.status,
                    "observation": observation if seen == r.node.id else f"the same as {seen}'s",
                }
            )
        return results

    async def _join(self, attempt: int, plan: _Attempt) -> _Decision:
        """One model call over the plan's results: finish with the answer, or plan again.

        Asked in the plan's own conversation, after the plan: a local model reuses what it
        computed for the prompt and the plan, and a plan made next reads the results there,
        not again. (Asked apart, the 1.5B's joiner took 80 s of a 194 s run on 2 cores, a
        prompt of 2,231 tokens read from its first; in the conversation, with the plan cut at
        its first repeated node, 17–32 s; issue 24.)"""
        self._follow_up("dag_join.j2", query=self.task.query, results=self._results(plan))
        request = ModelRequest(messages=self.messages, json_schema=JOIN_SCHEMA, purpose="join")
        decision = await self.kernel.ask_json(request, _Decision, step=attempt)
        if isinstance(decision, Invalid):
            msg = (
                f"the joiner's answer does not fit its schema ({decision.describe()}): "
                f"{decision.text[:200]!r}"
            )
            raise ModelError(msg)
        self.messages.append(Message(role="assistant", content=json.dumps(decision.model_dump())))
        self.ctx.emit(
            PlanDecisionEvent, attempt=attempt, action=decision.action, reason=decision.reason
        )
        return decision

    async def _fall_back(self, reason: str) -> PlannerResult:
        self.ctx.emit(PlannerFallbackEvent, planner="dag", to="react", reason=reason)
        return await run_react(self.task, self.strategy)


def _describe(errors: Sequence[Any]) -> str:
    """Some of a `ValidationError`'s errors, as `loc: message; …` for the model."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in errors)
