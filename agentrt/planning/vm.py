"""Internal. The `vm` planner: the model writes a StackVM program, which a small VM runs.

A program is a list of instructions `{seq_no, type, parameters}`, run in order over a store of
variables:

    reasoning   chain_of_thoughts, dependency_analysis: the plan's explanation; does nothing
    assign      {name: value or "${var}", …}: sets variables
    calling     tool_name, tool_params (may use "${var}"), output_vars: one name (the whole
                result) or a list (those keys of a JSON result)
    jmp         target_seq; or condition_prompt (+ context), answered by the model as
                {"result": bool, "explanation": str}, then jump_if_true / jump_if_false

A program is read as it streams and cut before the third copy of one instruction (a model
looping); one that calls tools but never sets final_answer is given a last `llm_generate` step
that answers the question from what they stored. Before it runs, a program is checked and every
problem named with its seq_no; an invalid one is sent back for repair (`vm.repairs` times),
then the run falls back to `react`. While it runs,
every instruction is a `vm_instruction` event with the variables it wrote; a loop that passes
`vm.max_instructions` ends the run `budget_exhausted`. Consecutive `calling` steps run
concurrently as far as their variables allow (each waits only for the steps it reads from, or
would overwrite) — the store ends as it would have sequentially. The answer is `final_answer`.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from agentrt.events import (
    GuardEvent,
    PlanInvalidEvent,
    PlannerFallbackEvent,
    PlanWarningEvent,
    VmInstructionEvent,
)
from agentrt.exceptions import ProgramFailed
from agentrt.models.base import Message, ModelRequest, ToolDefinition
from agentrt.parsing.answers import JSONProblem, find_json
from agentrt.parsing.plans import PlanStreamParser
from agentrt.planning.base import PlannerInput, PlannerResult
from agentrt.planning.kernel import Invalid, Kernel, plan_tools
from agentrt.planning.react import run_react
from agentrt.planning.references import (
    VARIABLE,
    VARIABLE_PATTERN,
    Unresolved,
    expressions,
    referable,
    references,
    resolve,
)
from agentrt.strategy import VmPolicy, VmStrategy
from agentrt.tool import Tool

__all__ = [
    "Instruction",
    "common_errors",
    "program_schema",
    "run_vm",
    "validate_program",
]


class Instruction(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    seq_no: int = Field(ge=0)
    type: Literal["reasoning", "assign", "calling", "jmp"]
    parameters: dict[str, JsonValue] = Field(default_factory=dict)


THOUGHT_CHARS = 600
"""The longest text a `reasoning` instruction's fields may hold under a grammar: the 1.5B,
unbounded, went on reasoning until its token cap cut the program, three times (issue 24)."""


def program_schema(tools: Sequence[ToolDefinition]) -> dict[str, Any]:
    """The JSON schema programs are asked for under (an object, which every server accepts).

    A `calling` instruction is one of the tools with that tool's own `tool_params`
    (`referable`: each may be a `${variable}`), as a `dag` node is: the outer shape alone let a
    small model call tools by names and with arguments it made up."""
    thoughts = {
        "type": "object",
        "properties": {
            "chain_of_thoughts": {"type": "string", "maxLength": THOUGHT_CHARS},
            "dependency_analysis": {"type": "string", "maxLength": THOUGHT_CHARS},
        },
        "required": ["chain_of_thoughts", "dependency_analysis"],
        "additionalProperties": False,
    }
    others = {"type": "string", "enum": ["assign", "jmp"]}
    variable = {"type": "string", "pattern": VARIABLE_PATTERN}
    instructions = [
        _instruction({"type": "string", "enum": ["reasoning"]}, thoughts),
        _instruction(others, {"type": "object"}),
    ]
    for t in tools:
        parameters = {
            "type": "object",
            "properties": {
                "tool_name": {"type": "string", "enum": [t.name]},
                "tool_params": referable(t.parameters),
                # Names a reference can read: the 1.5B wrote "vogalt_foods founding_year".
                "output_vars": {"anyOf": [variable, {"type": "array", "items": variable}]},
            },
            "required": ["tool_name", "tool_params", "output_vars"],
            "additionalProperties": False,
        }
        instructions.append(_instruction({"type": "string", "enum": ["calling"]}, parameters))
    return {
        "type": "object",
        # At least one instruction: asked to repair a program, the 1.5B wrote `{"program": []}`,
        # which the check refuses every time (issue 24).
        "properties": {
            "program": {"type": "array", "items": {"anyOf": instructions}, "minItems": 1}
        },
        "required": ["program"],
        "additionalProperties": False,
    }


def _instruction(kind: dict[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"seq_no": {"type": "integer"}, "type": kind, "parameters": parameters},
        "required": ["seq_no", "type", "parameters"],
        "additionalProperties": False,
    }


class _Condition(BaseModel):
    result: bool
    explanation: str


CONDITION_SCHEMA = _Condition.model_json_schema()


def validate_program(
    raw: Sequence[Any], tools: Mapping[str, Tool]
) -> tuple[list[Instruction], list[str]]:
    """The program, and every problem that keeps it from running, each with its seq_no."""
    program: list[Instruction] = []
    problems: list[str] = []
    for position, item in enumerate(raw):
        try:
            program.append(Instruction.model_validate(item))
        except ValidationError as exc:
            where = item.get("seq_no", f"#{position}") if isinstance(item, dict) else f"#{position}"
            detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            problems.append(f"seq_no {where}: not an instruction: {detail}")
    if not raw:
        return [], ["the program has no instructions"]
    numbers = [i.seq_no for i in program]
    for n in sorted({n for n in numbers if numbers.count(n) > 1}):
        problems.append(f"seq_no {n} is used {numbers.count(n)} times; each must be unique")
    if sorted(set(numbers)) != list(range(len(set(numbers)))):
        missing = sorted(set(range(max(numbers, default=0) + 1)) - set(numbers))
        problems.append(
            f"seq_no must run from 0 without gaps (missing: {', '.join(map(str, missing))})"
        )
    if problems:
        return program, problems
    program.sort(key=lambda i: i.seq_no)
    if program[0].type != "reasoning":
        problems.append(f"seq_no 0 must be a 'reasoning' instruction, not {program[0].type!r}")
    for ins in program:
        problems += _instruction_problems(ins, tools, len(program))
    if problems:
        return program, problems
    problems += _dataflow_problems(program)
    last = program[-1]
    if "final_answer" not in _writes(last):
        problems.append(
            f"seq_no {last.seq_no}: the last instruction must produce final_answer "
            "(assign it, or name it in output_vars)"
        )
    return program, problems


def common_errors(program: Sequence[Instruction], policy: VmPolicy) -> list[tuple[int, str]]:
    """The specification's "common errors" (warnings; the program still runs): a general tool
    asked what it cannot know, such as runtime facts, or asked to run SQL (`policy`'s
    `general_tools` and `common_errors`)."""
    found: list[tuple[int, str]] = []
    for ins in program:
        tool = ins.parameters.get("tool_name")
        if ins.type != "calling" or not isinstance(tool, str) or tool not in policy.general_tools:
            continue
        text = json.dumps(ins.parameters.get("tool_params", {}), ensure_ascii=False)
        found += [
            (ins.seq_no, error.warning.replace("{tool}", tool))
            for error in policy.common_errors
            if error.pattern.search(text)
        ]
    return found


def _instruction_problems(ins: Instruction, tools: Mapping[str, Tool], size: int) -> list[str]:
    p = ins.parameters
    at = f"seq_no {ins.seq_no}"
    problems = [
        f"{at}: {text!r} computes with a variable; the VM only substitutes: compute it in a "
        "step of its own"
        for text in expressions(p)
    ]
    if ins.type == "assign":
        if not p:
            problems.append(f"{at}: assign sets no variable")
        for name in sorted(set(p) & references(list(p.values()))):
            problems.append(
                f"{at}: assign reads ${{{name}}}, which it also assigns; split it in two"
            )
    elif ins.type == "calling":
        tool = p.get("tool_name")
        if not isinstance(tool, str) or tool not in tools:
            problems.append(f"{at}: no tool {tool!r} (the tools are: {', '.join(tools)})")
        if not isinstance(p.get("tool_params", {}), dict):
            problems.append(f"{at}: tool_params must be an object")
        outputs = p.get("output_vars")
        if outputs is not None and not (
            isinstance(outputs, str)
            or (isinstance(outputs, list) and all(isinstance(o, str) for o in outputs))
        ):
            problems.append(f"{at}: output_vars must be a name or a list of names")
    elif ins.type == "jmp":
        targets = [p.get(k) for k in ("target_seq", "jump_if_true", "jump_if_false") if k in p]
        if "condition_prompt" in p:
            if "jump_if_true" not in p or "jump_if_false" not in p:
                problems.append(f"{at}: a conditional jmp needs jump_if_true and jump_if_false")
        elif "target_seq" not in p:
            problems.append(
                f"{at}: jmp needs target_seq, or condition_prompt with jump_if_true and "
                "jump_if_false"
            )
        for target in targets:
            if not isinstance(target, int) or not 0 <= target < size:
                problems.append(f"{at}: jump target {target!r} is not an instruction")
    return problems


def _writes(ins: Instruction) -> set[str]:
    if ins.type == "assign":
        return set(ins.parameters)
    if ins.type == "calling":
        outputs = ins.parameters.get("output_vars")
        if isinstance(outputs, str):
            return {outputs}
        if isinstance(outputs, list):
            return {o for o in outputs if isinstance(o, str)}
    return set()


def _reads(ins: Instruction) -> set[str]:
    p = ins.parameters
    if ins.type == "assign":
        return references(list(p.values()))
    if ins.type == "calling":
        return references(p.get("tool_params", {}))
    if ins.type == "jmp":
        return references([p.get("condition_prompt"), p.get("context")])
    return set()


def _successors(ins: Instruction, size: int) -> list[int]:
    p = ins.parameters
    if ins.type == "jmp":
        if "condition_prompt" in p:
            return [int(p["jump_if_true"]), int(p["jump_if_false"])]  # type: ignore[arg-type]
        return [int(p["target_seq"])]  # type: ignore[arg-type]
    return [ins.seq_no + 1] if ins.seq_no + 1 < size else []


def _dataflow_problems(program: Sequence[Instruction]) -> list[str]:
    """Every variable read must be assigned on some path to the reader (a may-analysis over
    the jumps: reaching a step by any path that assigned it is enough)."""
    size = len(program)
    assigned_in: list[set[str] | None] = [None] * size  # None: not reached (yet)
    assigned_in[0] = set()
    work = [0]
    while work:
        i = work.pop()
        after = (assigned_in[i] or set()) | _writes(program[i])
        for j in _successors(program[i], size):
            before = assigned_in[j]
            if before is None or not after <= before:
                assigned_in[j] = (before or set()) | after
                work.append(j)
    problems = []
    for ins, known in zip(program, assigned_in, strict=True):
        if known is None:
            continue  # unreachable: it never runs
        for name in sorted(_reads(ins) - known):
            problems.append(
                f"seq_no {ins.seq_no} reads ${{{name}}}, which no instruction assigns before it"
            )
    return problems


async def run_vm(task: PlannerInput, strategy: VmStrategy) -> PlannerResult:
    vm = _Vm(task, strategy)
    return await vm.kernel.run(vm.run)


class _Vm:
    def __init__(self, task: PlannerInput, strategy: VmStrategy) -> None:
        self.task = task
        self.ctx = task.ctx
        self.kernel = Kernel(task)
        self.strategy = strategy
        self.policy = strategy.vm
        self.tools = plan_tools(task)
        self.definitions: list[ToolDefinition] = [t.definition for t in self.tools.values()]
        self.schema = program_schema(self.definitions)
        self.messages = self.kernel.opening(task.prompt("vm.j2", self.definitions))
        self.store: dict[str, JsonValue] = {}
        self.executed = 0
        self._runs: dict[int, int] = {}
        """How often each calling step has run (a loop runs one again)."""

    async def run(self) -> PlannerResult:
        kernel = self.kernel
        attempts = self.policy.repairs + 1
        repairs = 0
        while kernel.steps < attempts and (attempt := kernel.next_step()) is not None:
            raw, program, problems = await kernel.turn(
                attempt, functools.partial(self._write, attempt, retry=repairs)
            )
            if not problems:
                for seq_no, warning in common_errors(program, self.policy):
                    self.ctx.emit(PlanWarningEvent, where=f"seq_no {seq_no}", warning=warning)
                return await self._execute(program)
            repairing = attempt < attempts and kernel.budget_left
            self.ctx.emit(PlanInvalidEvent, attempt=attempt, problems=problems, repairing=repairing)
            if repairing:
                repairs += 1
                repair = self.task.prompt("vm_repair.j2", self.definitions, problems=problems)
                self.messages += [
                    Message(role="assistant", content=raw),
                    Message(role="user", content=repair),
                ]
        if kernel.tokens_spent:
            return kernel.result("budget_exhausted")
        reason = f"no valid program after {kernel.steps} attempt(s)"
        self.ctx.emit(PlannerFallbackEvent, planner="vm", to="react", reason=reason)
        return await run_react(self.task, self.strategy)

    async def _write(self, attempt: int, *, retry: int) -> tuple[str, list[Instruction], list[str]]:
        """Ask for the program (one model call) and check it.

        :param retry: programs sent back for repair so far (`ModelRequest.retry`)
        """
        request = ModelRequest(
            messages=self.messages, json_schema=self.schema, purpose="program", retry=retry
        )
        parser = PlanStreamParser(items="program")
        written: Counter[str] = Counter()

        def looping(text: str) -> bool:
            for item in parser.feed(text):
                if self._repeats(attempt, item, written):
                    parser.cut(written.total())
                    return True
            return False

        await self.ctx.complete(request, step=attempt, until=looping)
        raw = parser.text
        try:
            value = find_json(raw)
        except JSONProblem as exc:
            return raw, [], [f"the program is not valid JSON: {exc}"]
        items = value.get("program") if isinstance(value, dict) else value
        if not isinstance(items, list):
            return raw, [], ['the answer must be {"program": [instructions…]}']
        program, problems = validate_program(items, self.tools)
        step = self._answer_step(program) if problems else None
        if step is not None:
            self.ctx.emit(
                PlanWarningEvent,
                where=f"seq_no {step['seq_no']}",
                warning="the program never set final_answer: a last step asks llm_generate "
                "the question over what its calls stored",
            )
            program, problems = validate_program([*items, step], self.tools)
        return raw, program, problems

    def _answer_step(self, program: Sequence[Instruction]) -> dict[str, Any] | None:
        """The step a program that calls tools but never sets final_answer gets at its end:
        `llm_generate` asked the question, over every variable a call stored. The 1.5B wrote
        such programs (`{"a": "final_answer", "b": …}` last) and, told the problem, wrote them
        again unchanged, twice (issue 24); the answer cannot be anything else's."""
        if "llm_generate" not in self.tools or any("final_answer" in _writes(i) for i in program):
            return None
        stored = sorted(
            name
            for ins in program
            if ins.type == "calling"
            for name in _writes(ins)
            if VARIABLE.fullmatch(name)
        )
        if not stored:
            return None
        return {
            "seq_no": len(program),
            "type": "calling",
            "parameters": {
                "tool_name": "llm_generate",
                "tool_params": {
                    "prompt": f"{self.task.query}\nAnswer from the context: the answer alone.",
                    "context": {name: f"${{{name}}}" for name in stored},
                },
                "output_vars": "final_answer",
            },
        }

    def _repeats(self, attempt: int, item: dict[str, Any], written: Counter[str]) -> bool:
        """Whether an instruction that streamed in is the third copy of one in its program
        (type and parameters; seq_no aside); else it is counted in `written`. The 1.5B, once it
        repeats instructions, writes them again until its token cap: 1,536 tokens (two minutes
        of a 2-core machine) of a program cut mid-JSON, whose repair did the same (issue 24).
        The program is cut before it (guard `repetition`), as a `dag` plan is at its first
        repeated node; a second copy is let be, since two branches of a program may each end
        with the same `assign` or `jmp`."""
        identity = json.dumps([item.get("type"), item.get("parameters")], sort_keys=True)
        if written[identity] < 2:
            written[identity] += 1
            return False
        seq_no = item.get("seq_no", written.total())
        self.ctx.emit(
            GuardEvent,
            step=attempt,
            call_id=f"vm{seq_no}",
            kind="repetition",
            detail=f"seq_no {seq_no} is the third copy of an earlier instruction; the program "
            "is cut before it",
        )
        return True

    async def _execute(self, program: list[Instruction]) -> PlannerResult:
        attempt, kernel = self.kernel.steps, self.kernel
        pc = 0
        while pc < len(program):
            ins = program[pc]
            if ins.type == "calling":
                group = [ins]
                while pc + len(group) < len(program) and program[pc + len(group)].type == "calling":
                    group.append(program[pc + len(group)])
                if self.executed + len(group) > self.policy.max_instructions:
                    group = group[: max(0, self.policy.max_instructions - self.executed)]
                    if not group:
                        return kernel.result("budget_exhausted")
                await self._call_group(attempt, group)
                pc += len(group)
                continue
            if self.executed >= self.policy.max_instructions:
                return kernel.result("budget_exhausted")
            self.executed += 1
            pc = await self._step(attempt, ins)
        if "final_answer" not in self.store:
            msg = "the program ended without assigning final_answer"
            raise ProgramFailed(msg)
        answer = self.store["final_answer"]
        return kernel.result("ok", answer if isinstance(answer, str) else json.dumps(answer))

    async def _step(self, attempt: int, ins: Instruction) -> int:
        """Run one non-calling instruction; return the next seq_no."""
        p = ins.parameters
        writes: dict[str, JsonValue] = {}
        following = ins.seq_no + 1
        if ins.type == "assign":
            resolved = resolve(p, self.store.__getitem__)
            if isinstance(resolved, Unresolved):
                msg = f"seq_no {ins.seq_no} (assign): {resolved.problem}"
                raise ProgramFailed(msg)
            writes = resolved
            self.store.update(writes)
        elif ins.type == "jmp":
            following = await self._jump(attempt, ins)
        self.ctx.emit(
            VmInstructionEvent,
            seq_no=ins.seq_no,
            instruction=ins.type,
            writes=writes,
            jumped_to=following if ins.type == "jmp" else None,
        )
        return following

    async def _jump(self, attempt: int, ins: Instruction) -> int:
        p = ins.parameters
        if "condition_prompt" not in p:
            return int(p["target_seq"])  # type: ignore[arg-type]
        question = resolve(p["condition_prompt"], self.store.__getitem__)
        context = resolve(p.get("context"), self.store.__getitem__)
        for value in (question, context):
            if isinstance(value, Unresolved):
                msg = f"seq_no {ins.seq_no} (jmp): {value.problem}"
                raise ProgramFailed(msg)
        content = question if context is None else f"{question}\n\nContext:\n{context}"
        request = ModelRequest(
            messages=[
                Message(
                    role="system",
                    content='Answer with one JSON object: {"result": true or false, '
                    '"explanation": "<why>"}.',
                ),
                Message(role="user", content=str(content)),
            ],
            json_schema=CONDITION_SCHEMA,
            purpose="condition",
        )
        verdict = await self.kernel.ask_json(request, _Condition, step=attempt)
        if isinstance(verdict, Invalid):
            msg = (
                f"seq_no {ins.seq_no}: the condition's answer is not the JSON asked for: "
                f"{verdict.error}"
            )
            raise ProgramFailed(msg)
        target = p["jump_if_true"] if verdict.result else p["jump_if_false"]
        return int(target)  # type: ignore[arg-type]

    async def _call_group(self, attempt: int, group: list[Instruction]) -> None:
        """Run consecutive calling steps, each as soon as the earlier ones it depends on are
        done: it reads what they write, or writes what they read or write."""
        done = {ins.seq_no: asyncio.Event() for ins in group}
        failures: list[str] = []

        def waits_for(i: int) -> list[int]:
            me = group[i]
            return [
                earlier.seq_no
                for earlier in group[:i]
                if _writes(earlier) & (_reads(me) | _writes(me)) or _reads(earlier) & _writes(me)
            ]

        async def one(i: int) -> None:
            ins = group[i]
            try:
                for seq_no in waits_for(i):
                    await done[seq_no].wait()
                failure = None if failures else await self._call(attempt, ins)
                if failure is not None:
                    failures.append(failure)
            finally:
                done[ins.seq_no].set()

        async with asyncio.TaskGroup() as tg:
            for i in range(len(group)):
                tg.create_task(one(i))
        self.executed += len(group)
        if failures:
            raise ProgramFailed(failures[0])

    async def _call(self, attempt: int, ins: Instruction) -> str | None:
        """Run one calling step and store what it writes; why it failed, if it did."""
        p = ins.parameters
        tool = str(p["tool_name"])
        # A step run again by a loop gets a fresh call id.
        runs = self._runs[ins.seq_no] = self._runs.get(ins.seq_no, 0) + 1
        call_id = f"vm{ins.seq_no}" if runs == 1 else f"vm{ins.seq_no}.{runs}"
        params = resolve(p.get("tool_params", {}), self.store.__getitem__)
        if isinstance(params, Unresolved):
            return f"seq_no {ins.seq_no} (calling {tool}): {params.problem}"
        outcome = await self.kernel.call_tool(
            tool, params, raw=json.dumps(p, ensure_ascii=False), step=attempt, call_id=call_id
        )
        if outcome.status != "ok":
            return f"seq_no {ins.seq_no} (calling {tool}) failed: {outcome.error}"
        writes = self._outputs(ins, outcome.output)
        if isinstance(writes, str):
            return writes
        self.store.update(writes)
        self.ctx.emit(VmInstructionEvent, seq_no=ins.seq_no, instruction="calling", writes=writes)
        return None

    def _outputs(self, ins: Instruction, output: JsonValue) -> dict[str, JsonValue] | str:
        """The variables a result sets, or why it cannot set them."""
        names = ins.parameters.get("output_vars")
        if names is None:
            return {}
        if isinstance(names, str):
            return {names: output}
        keys = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
        value = output
        if isinstance(value, str):
            try:
                value = find_json(value)
            except JSONProblem:
                value = None
        if not isinstance(value, dict):
            return (
                f"seq_no {ins.seq_no}: output_vars {names} asks for keys of a JSON object, "
                f"but the result is not one: {str(output)[:200]!r}"
            )
        missing = [n for n in keys if n not in value]
        if missing:
            return (
                f"seq_no {ins.seq_no}: the result has no key {', '.join(map(repr, missing))} "
                f"(it has: {', '.join(value)})"
            )
        return {n: value[n] for n in keys}
