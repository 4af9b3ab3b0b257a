"""The event contract: every event of a run, as one discriminated union on `type`.

The same objects are streamed to callers, written to the trajectory, sent as SSE and as NDJSON;
in a server each is serialised once (`EventBase.json_bytes`): the trajectory line, the SSE
`data:` and the NDJSON line are those bytes. Every event carries `run_id`, `seq` (gap-free from
0 within a run) and `t` (seconds since the run started). A run always ends with exactly one
`RunFinishedEvent`.

A call found in the model's output produces either `tool_call_invalid`, or `tool_call` followed
by exactly one `tool_finished` (with `tool_started` between them unless the result came from the
run's cache, which a `guard` event announces).

This module depends on nothing else in agentrt.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from functools import cached_property
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter

__all__ = [
    "AnswerDoubt",
    "ApprovalRequestedEvent",
    "Approve",
    "AskEvent",
    "ClassifiedEvent",
    "CoverageEvent",
    "Decision",
    "Event",
    "EventBase",
    "GuardEvent",
    "IntentEvent",
    "ModelErrorEvent",
    "ModelResponseEvent",
    "NarrowedTool",
    "NativeToolCall",
    "NodeSkippedEvent",
    "OutputDeltaEvent",
    "PendingCall",
    "PipelineStep",
    "PlanAdaptedEvent",
    "PlanCreatedEvent",
    "PlanDecisionEvent",
    "PlanInvalidEvent",
    "PlanNode",
    "PlanWarningEvent",
    "PlannerFallbackEvent",
    "ReasoningDeltaEvent",
    "Reject",
    "RepairEvent",
    "RequirementsEvent",
    "RunFinishedEvent",
    "RunResumedEvent",
    "RunStartedEvent",
    "RunStatus",
    "StrategySelectedEvent",
    "TextDeltaEvent",
    "Timings",
    "ToolCallEvent",
    "ToolCallInvalidEvent",
    "ToolFinishedEvent",
    "ToolStartedEvent",
    "ToolStatus",
    "ToolsNarrowedEvent",
    "TurnStartedEvent",
    "Usage",
    "VmInstructionEvent",
    "event_adapter",
]

RunStatus = Literal["ok", "needs_input", "needs_approval", "budget_exhausted", "cancelled", "error"]
"""How a run ended. `needs_input`: the model asked the user a question (see `AskEvent`); the
session's next run takes the user's reply. `needs_approval`: a tool call awaits a person (see
`ApprovalRequestedEvent`); `agent.resume` carries the decisions on."""

AnswerDoubt = Literal["raw_tool_call", "tool_error", "tools_failed"]
"""Why the answer of a run that ended `ok` is not taken for one (`RunFinishedEvent.doubt`).
`raw_tool_call`: it holds a tool call the run did not read as one (a call in a format or place
the parser leaves as text, naming no tool on offer). `tool_error`: it repeats the error of a call
that failed (a guard's refusal, an invalid call). `tools_failed`: the run called tools and none
succeeded, so the answer rests on no result (or none of the strategy's `answer_needs` tools
succeeded, e.g. a copilot's query)."""

ToolStatus = Literal["ok", "error", "timeout", "cancelled"]
"""How one tool call ended."""


class Usage(BaseModel):
    """Token counts, per model call or summed over a run."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class NativeToolCall(BaseModel):
    """A tool call as an OpenAI-compatible server returned it, arguments still a JSON string."""

    model_config = ConfigDict(defer_build=True)

    id: str | None = None
    name: str
    arguments: str


class NarrowedTool(BaseModel):
    """One tool offered to the model, and why."""

    model_config = ConfigDict(defer_build=True)

    name: str
    source: Literal["builtin", "template", "retrieved", "safety", "session", "capability"]
    """Why it is offered: the engine's own (`finish`), the strategy's list, retrieval for this
    query, the strategy's safety set, created earlier in the session, or (`pipeline`) the
    capability map, for a requirement nothing else offered could cover."""
    score: float | None = None
    """Retrieval score, when the tool was retrieved: the hybrid (dense + BM25) score of
    `agentrt.catalog.fusion.fuse`, higher is better."""
    duplicates: list[str] = Field(default_factory=list)
    """Near-duplicates of this tool (same name but for case and separators, or the same
    metadata) that retrieval found and collapsed into it: not offered."""


class Timings(BaseModel):
    """Where a run's wall time went, in seconds."""

    model_config = ConfigDict(defer_build=True)

    total: float
    model: float
    """Time spent waiting on model calls (classification included)."""
    tools: float
    """Sum of tool durations; larger than the wall time they took when calls overlap."""


class EventBase(BaseModel):
    # Schemas are built on first use, not at import: `import agentrt` stays fast.
    model_config = ConfigDict(frozen=True, defer_build=True)

    run_id: str
    seq: int
    """Position in the run's event stream: 0, 1, 2, … without gaps."""
    t: float
    """Seconds since the run started."""

    @cached_property
    def json_bytes(self) -> bytes:
        """The event as JSON (`model_dump_json`, as bytes): the trajectory line, the SSE `data:`
        and the NDJSON line. Serialised on first use, then kept (an event is frozen): in a
        server, the trajectory and every stream of the run share the one serialisation."""
        return self.__pydantic_serializer__.to_json(self)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=deep)
        # pydantic copies the instance's `__dict__`, where the JSON of the original is kept.
        copied.__dict__.pop("json_bytes", None)
        return copied


class RunStartedEvent(EventBase):
    type: Literal["run_started"] = "run_started"
    started_at: datetime
    """Wall-clock start (UTC): `started_at + t` dates any event of the run."""
    query: str
    session_id: str | None = None
    model: str
    """The model's name as it reports it."""
    tool_format: str | None = None
    """The tool-call format the prompt asks for (`AgentSettings.tool_format`, `auto` resolved
    by the model's family); None in runs recorded before it was chosen."""


class ClassifiedEvent(EventBase):
    type: Literal["classified"] = "classified"
    query_type: str
    language: str = "und"
    suggested_contexts: list[str] = Field(default_factory=list)
    method: Literal["model", "fallback", "forced", "only"]
    """`model` when the classifier answered, `fallback` when it failed, `forced` by the caller,
    `only` when the workspace has one strategy (no model call is made)."""
    reason: str | None = None
    """Why the fallback was taken."""


class StrategySelectedEvent(EventBase):
    type: Literal["strategy_selected"] = "strategy_selected"
    strategy: str
    planner: str
    step_budget: int


class ToolsNarrowedEvent(EventBase):
    type: Literal["tools_narrowed"] = "tools_narrowed"
    tools: list[NarrowedTool]
    missed: list[str] = Field(default_factory=list)
    """Requirement labels (`pipeline`) that no template, retrieved or safety tool covered: a
    retrieval miss, mended from the capability map."""
    fit: float | None = None
    """How sure tool retrieval is that some tool of the workspace serves the query, 0 to 1 (the
    best tool's cosine similarity, scaled by half plus half the IDF-weighted share of the
    query's words its metadata holds: `agentrt.catalog.fusion.fit`); None when the strategy
    retrieves nothing."""
    no_fit: bool = False
    """The fit was below the strategy's `min_fit`: no retrieved tool was offered, and the model
    was told no tool fits."""


class TurnStartedEvent(EventBase):
    type: Literal["turn_started"] = "turn_started"
    step: int


class TextDeltaEvent(EventBase):
    """Visible text as the model streams it (tool-call markup removed)."""

    type: Literal["text_delta"] = "text_delta"
    step: int
    text: str


class ReasoningDeltaEvent(EventBase):
    """The model's reasoning as it streams (``<think>`` blocks, gpt-oss's analysis channel, or
    sent apart by the server), its tags removed, from every model call of the run. Kept in
    the trajectory, never part of the answer, of a `text_delta` or of what a step parses (a
    plan, a typed output, a classification), and a tool call written in it is never run."""

    type: Literal["reasoning_delta"] = "reasoning_delta"
    step: int | None
    """The turn it belongs to; None for calls outside turns (classification)."""
    text: str


class OutputDeltaEvent(EventBase):
    """The typed output as far as it has streamed, parsed (a string still being written is
    cut where it stands; fields not yet written are absent). Only runs with an `output_type`
    other than `str` send it."""

    type: Literal["output_delta"] = "output_delta"
    step: int
    output: JsonValue
    valid: bool
    """Whether this much is valid so far (pydantic's partial validation: what is there fits
    the type, and the type lets what is missing come later)."""


class ModelResponseEvent(EventBase):
    """A model call finished: its complete raw output, which is what replay feeds back."""

    type: Literal["model_response"] = "model_response"
    step: int | None
    """The turn it belongs to; None for calls outside turns (classification)."""
    purpose: str
    """What the call was for: `turn`, `classify`, …"""
    text: str
    """The text as the model wrote it, its reasoning tags included; when its prompt ended
    inside an open ``<think>`` (`Model.starts_in_reasoning`), that ``<think>`` leads it, so
    that a replay splits it the same without knowing the prompt."""
    reasoning: str = ""
    """Reasoning the server sent apart from the text (`ReasoningChunk`)."""
    tool_calls: list[NativeToolCall] = Field(default_factory=list)
    tool_confidence: float | None = None
    """How sure the model was, before it wrote, that one of the offered tools serves the
    message (`ToolConfidenceChunk`); None when not measured."""
    tools_withheld: bool = False
    """The confidence was below the model's threshold: the model wrote nothing, and the turn
    was asked again with only the tools that answer, the model told that no tool fits."""
    # Made without validating: validating a model at import builds its schema, and the first
    # schema built loads pydantic's plugin machinery (importlib.metadata), a tenth of
    # `import agentrt`. `Usage()` and this are equal.
    usage: Usage = Usage.model_construct()
    duration: float


class ModelErrorEvent(EventBase):
    """A model call failed; what it had streamed is discarded."""

    type: Literal["model_error"] = "model_error"
    step: int | None
    error: str
    retrying: bool
    """The turn is asked again (after a stream broken mid-answer, once by default)."""


class ToolCallEvent(EventBase):
    """A call was parsed and its arguments validated; it is queued to run."""

    type: Literal["tool_call"] = "tool_call"
    step: int
    call_id: str
    name: str
    arguments: dict[str, JsonValue]
    """As the model wrote them (the tool receives them validated, defaults filled in)."""
    format: Literal["tag", "hermes", "json", "native", "plan"]
    """How the call was written; `plan`: a step of a `dag`, `vm` or `pipeline` plan, or one of
    a `react` strategy's `first_calls`."""
    depends_on: list[str] = Field(default_factory=list)
    """Calls whose results this one waits for (the edges of a plan); empty in `react`."""


class ToolCallInvalidEvent(EventBase):
    """A call that cannot run: malformed, unknown tool, not allowed, or bad arguments."""

    type: Literal["tool_call_invalid"] = "tool_call_invalid"
    step: int
    call_id: str
    name: str | None
    raw: str
    reason: str
    """The same text the model receives as the call's observation."""


class ToolStartedEvent(EventBase):
    type: Literal["tool_started"] = "tool_started"
    step: int
    call_id: str
    name: str


class ToolFinishedEvent(EventBase):
    type: Literal["tool_finished"] = "tool_finished"
    step: int
    call_id: str
    name: str
    status: ToolStatus
    output: JsonValue = None
    error: str | None = None
    duration: float
    cached: bool = False
    """The result was taken from the run's cache (see `GuardEvent`)."""


class GuardEvent(EventBase):
    """A runtime guard stepped in, e.g. an identical repeated call answered from the cache."""

    type: Literal["guard"] = "guard"
    step: int
    call_id: str
    kind: Literal[
        "duplicate",
        "early_finish",
        "repetition",
        "needs_result",
        "awaits_result",
        "unfounded_answer",
        "echoed_question",
    ]
    """`duplicate`: an identical call answered from the cache. `early_finish`: a call that ends
    the run, written in the same turn as other calls, refused until their results are seen.
    `repetition`: the model wrote a call it had already written in this turn (or a node of its
    plan), a loop: the call is dropped and the model's answer (or plan) cut there.
    `needs_result`: a call written after one whose result it needs (the strategy's `after`) in
    the same turn: not run. `awaits_result`: a call another tool needs the result of
    (`after`): the turn is cut after it, and what the model wrote next is not read.
    `unfounded_answer`: an answer before any of the strategy's `answer_needs` tools
    succeeded: sent back, the model is asked to call one. `echoed_question`: a question to
    the user (`ask_user`) that is the user's own question: not asked, the model is told to
    answer it."""
    detail: str
    original_call_id: str | None = None


class PlanNode(BaseModel):
    """One node of a `dag` plan: a tool call, and the nodes whose results it needs."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    tool: str
    args: dict[str, JsonValue] = Field(default_factory=dict)
    """May refer to results: `"{T1}"` (all of it) or `"${T1.rows[0].name}"` (a part)."""
    depends_on: list[str] = Field(default_factory=list)


class PlanCreatedEvent(EventBase):
    """A plan passed validation (its nodes may have started while it streamed)."""

    type: Literal["plan_created"] = "plan_created"
    attempt: int
    """1 for the first plan; each repair or replan adds one."""
    nodes: list[PlanNode]
    levels: list[list[str]]
    """Node ids by topological level: for reading only, nodes do not wait for their level."""
    text: str = ""
    """The human-readable plan the model wrote beside the nodes; never executed."""


class PlanInvalidEvent(EventBase):
    """A plan failed validation; the model is asked for a repair, or the planner gives up."""

    type: Literal["plan_invalid"] = "plan_invalid"
    attempt: int
    problems: list[str]
    """Each a sentence the model can act on (the repair request lists them)."""
    repairing: bool


class NodeSkippedEvent(EventBase):
    """A plan node did not run: a node it depends on failed or was skipped."""

    type: Literal["node_skipped"] = "node_skipped"
    call_id: str
    node: str
    reason: str


class PlanDecisionEvent(EventBase):
    """The joiner read a plan's results and decided: answer, or plan again."""

    type: Literal["plan_decision"] = "plan_decision"
    attempt: int
    action: Literal["finish", "replan"]
    reason: str


class PlannerFallbackEvent(EventBase):
    """The planner could not go on and handed the run to another."""

    type: Literal["planner_fallback"] = "planner_fallback"
    planner: str
    to: str
    reason: str


class VmInstructionEvent(EventBase):
    """One instruction of a `vm` program executed, with the variables it wrote."""

    type: Literal["vm_instruction"] = "vm_instruction"
    seq_no: int
    instruction: Literal["assign", "jmp", "calling", "reasoning"]
    writes: dict[str, JsonValue] = Field(default_factory=dict)
    jumped_to: int | None = None


class PlanWarningEvent(EventBase):
    """A plan does something the planners' specification advises against; it still runs."""

    type: Literal["plan_warning"] = "plan_warning"
    where: str
    """The node id or the instruction's seq_no."""
    warning: str


class PipelineStep(BaseModel):
    """One step of a `pipeline` plan: a tool call, and the requirements it satisfies."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    tool: str
    params: dict[str, JsonValue] = Field(default_factory=dict)
    satisfies: list[str] = Field(default_factory=list)
    """Requirement labels (`analysis.total`, `group_by`, `outputs.chart`, …)."""
    rationale: str = ""


class IntentEvent(EventBase):
    """The pipeline chose a template for the question."""

    type: Literal["intent"] = "intent"
    template: str
    confidence: float
    method: Literal["model", "fallback"]
    reason: str | None = None


class RequirementsEvent(EventBase):
    """What the question asks for, as the pipeline's closed vocabulary."""

    type: Literal["requirements"] = "requirements"
    requirements: dict[str, JsonValue]
    labels: list[str]
    """The requirement labels the plan must cover."""
    dropped: list[str] = Field(default_factory=list)
    """What was removed because the question holds no cue for it: analysis labels
    (`analysis.anomaly`), grouping columns (`group_by=[region]`), filter values
    (`filters.where.region=[East]`), a period (`filters.period=2024`)."""
    filled: list[str] = Field(default_factory=list)
    """What the data itself supplied, and why (`time.column=date: …`)."""


class PlanAdaptedEvent(EventBase):
    """The template, bound to the requirements and changed by the model."""

    type: Literal["plan_adapted"] = "plan_adapted"
    attempt: int
    """The model's attempt; 0 (no changes) when the plan the model changed failed as it ran
    and the plan before its changes, which the coverage check had passed, runs instead."""
    changes: list[dict[str, JsonValue]]
    steps: list[PipelineStep]


class CoverageEvent(EventBase):
    """The deterministic coverage check of a pipeline plan."""

    type: Literal["coverage"] = "coverage"
    attempt: int
    ok: bool
    covered: list[str]
    missing: list[str]
    """What no step covers, as the retry's payload names it (`group_by=[region]`)."""
    unjustified: list[str]
    """Steps no requirement justifies (by id)."""
    removed: list[str] = Field(default_factory=list)
    """Steps the check removed itself, once the model had its retry."""
    restored: list[str] = Field(default_factory=list)
    """Steps of the plan before the model's changes put back, because they covered a
    requirement the changed plan misses."""
    added: list[str] = Field(default_factory=list)
    """Steps the check put in itself, from the workspace's templates, for requirements no step
    covered: before the model's changes (`attempt` 0, with `removed` the steps no requirement
    justified), and once the model had its retry."""


class RepairEvent(EventBase):
    """A step's parameter was repaired before it ran, or a repair was refused."""

    type: Literal["repair"] = "repair"
    step: str
    param: str
    before: JsonValue = None
    after: JsonValue = None
    reason: str
    applied: bool
    """False for a semantic repair (a metric, a grouping, a grain), which is refused."""


class AskEvent(EventBase):
    """The model asked the user a clarifying question: the run ends `needs_input`, and the
    session's next run receives the reply with the question in its history."""

    type: Literal["ask"] = "ask"
    step: int
    call_id: str
    question: str


class PendingCall(BaseModel):
    """A tool call that waits for a person's decision."""

    model_config = ConfigDict(defer_build=True)

    call_id: str
    tool: str
    arguments: dict[str, JsonValue]
    """As the tool would receive them (validated, defaults filled in), as JSON; a plan node's
    as the plan wrote them (references to other nodes' results included)."""
    step: int
    node: str | None = None
    """The plan node, when a whole `dag` plan awaits approval (`approve_plan`): the plan is
    approved when every node is, rejected when one is (no edited arguments)."""


class ApprovalRequestedEvent(EventBase):
    """Tool calls wait for a person (`Tool(requires_approval=True)`, the agent's `approval`
    policy): they did not run, and the run ends `needs_approval`. `agent.resume(run_id,
    decisions)` continues it."""

    type: Literal["approval_requested"] = "approval_requested"
    calls: list[PendingCall]


def _tag_required(schema: dict[str, Any]) -> None:
    """A decision's `decision` has a default in Python (`Approve()`), but JSON must name it:
    it is the tag that tells the two apart."""
    schema["required"] = ["decision", *schema.get("required", [])]


class Approve(BaseModel):
    """Run the pending call: as the model wrote it, or with `arguments` instead (an edit,
    validated against the tool's schema before anything runs)."""

    model_config = ConfigDict(
        defer_build=True, frozen=True, extra="forbid", json_schema_extra=_tag_required
    )

    decision: Literal["approve"] = "approve"
    arguments: dict[str, JsonValue] | None = None


class Reject(BaseModel):
    """Do not run the pending call: the model reads `reason` as the call's error."""

    model_config = ConfigDict(
        defer_build=True, frozen=True, extra="forbid", json_schema_extra=_tag_required
    )

    decision: Literal["reject"] = "reject"
    reason: str


Decision = Annotated[Approve | Reject, Field(discriminator="decision")]
"""A person's answer to one pending call."""


class RunResumedEvent(EventBase):
    """A resumed run (`agent.resume`) has caught up with its earlier attempt: the events before
    this one were replayed from that attempt's recording (model turns not asked again,
    completed tool calls not run again); from here on the run is live."""

    type: Literal["run_resumed"] = "run_resumed"
    previous: str
    """The earlier attempt's trajectory file, by name (kept beside this one)."""
    replayed_turns: int
    """Model answers taken from the recording instead of the model."""
    reused_results: int
    """Tool results taken from the recording instead of running the tool."""
    decisions: dict[str, Decision] = Field(default_factory=dict)
    """The decisions the resume was given, by call id."""


class RunFinishedEvent(EventBase):
    type: Literal["run_finished"] = "run_finished"
    status: RunStatus
    answer: str | None = None
    """The answer; for `needs_input`, the question the user is asked. A typed output is here
    as its JSON text."""
    output: JsonValue = None
    """A typed output (an `output_type` other than `str`) as JSON, when the run ended `ok`."""
    error: str | None = None
    doubt: AnswerDoubt | None = None
    """Set on an `ok` run whose answer is not taken for one (see `AnswerDoubt`): evaluation
    counts it as failed and a UI can say so. The status stays `ok`: the run did end normally."""
    steps: int
    usage: Usage
    timings: Timings


Event = Annotated[
    RunStartedEvent
    | ClassifiedEvent
    | StrategySelectedEvent
    | ToolsNarrowedEvent
    | TurnStartedEvent
    | TextDeltaEvent
    | ReasoningDeltaEvent
    | OutputDeltaEvent
    | ModelResponseEvent
    | ModelErrorEvent
    | ToolCallEvent
    | ToolCallInvalidEvent
    | ToolStartedEvent
    | ToolFinishedEvent
    | GuardEvent
    | PlanCreatedEvent
    | PlanInvalidEvent
    | NodeSkippedEvent
    | PlanDecisionEvent
    | PlannerFallbackEvent
    | VmInstructionEvent
    | PlanWarningEvent
    | IntentEvent
    | RequirementsEvent
    | PlanAdaptedEvent
    | CoverageEvent
    | RepairEvent
    | AskEvent
    | ApprovalRequestedEvent
    | RunResumedEvent
    | RunFinishedEvent,
    Field(discriminator="type"),
]
"""Any event of a run. Parse one from JSON with `event_adapter.validate_json(line)`."""

event_adapter: TypeAdapter[Event] = TypeAdapter(Event, config=ConfigDict(defer_build=True))
