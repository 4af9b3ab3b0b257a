"""Strategies: what to do for each kind of query, kept as YAML data in `strategies/`.

A strategy file is named for the query type it serves (`strategies/aggregate.yaml` serves
`aggregate`) and gives the planner, the step budget, the tools the model may call, the
prompt file with its instructions and, optionally, what the model is told after its tool
results. The classifier chooses among the strategies it finds, so a new file is a new query
type.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from agentrt._validation import load_yaml, load_yaml_model
from agentrt.events import PipelineStep
from agentrt.exceptions import WorkspaceError

__all__ = [
    "CommonError",
    "DagPolicy",
    "DagStrategy",
    "DatasetProtocol",
    "FirstCall",
    "PipelinePolicy",
    "PipelineStrategy",
    "PipelineVocabulary",
    "ReactStrategy",
    "Strategy",
    "Template",
    "ToolTurns",
    "VmPolicy",
    "VmStrategy",
    "load_strategies",
    "load_templates",
    "load_vocabulary",
]


class DagPolicy(BaseModel):
    """How a `dag` run handles bad plans and failed nodes."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    on_failure: Literal["retry", "skip", "replan"] = "skip"
    """A failed node: run it again (`retries` times, then as `skip`); skip the nodes that
    depend on it; or skip them and plan again with the failure in the prompt."""
    retries: int = Field(1, ge=0, le=5)
    repairs: int = Field(2, ge=0, le=5)
    """How often an invalid plan is sent back to the model to be fixed; past that the run
    falls back to the `react` planner."""
    replans: int = Field(1, ge=0, le=5)
    """How often the run plans again (after the joiner asks, or a failure with `replan`)."""
    max_nodes: int = Field(12, ge=1, le=200)
    """The most nodes a plan may have under a grammar (the embedded model): the 1.5B wrote
    the same search node over and over until its token cap cut the plan."""
    approve_plan: bool = False
    """A person approves each plan as a whole before any of its nodes runs: once it is valid,
    the run ends `needs_approval` listing its nodes; `agent.resume` with every node approved
    runs it, with one rejected has the model plan again, reading the reason."""


class CommonError(BaseModel):
    """A request a general tool cannot serve, recognised in its parameters."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    pattern: re.Pattern[str]
    """Matched, ignoring case, against the call's `tool_params` as JSON text."""
    warning: str = Field(min_length=1)
    """The warning; `{tool}` is replaced by the tool's name."""

    @field_validator("pattern", mode="before")
    @classmethod
    def _ignore_case(cls, value: object) -> object:
        return re.compile(value, re.IGNORECASE) if isinstance(value, str) else value


def _common_errors() -> list[CommonError]:
    """`VmPolicy.common_errors`' default, made per policy (see `DagStrategy.dag`)."""
    return [
        CommonError(
            pattern=r"\b(current|installed|running|deployed)\s+(\w+\s+)?"
            r"(version|configuration|config|setup)\b|\bcluster\s+(status|state|health|topology)\b"
            r"|\bsystem\s+configuration\b",
            warning="{tool} knows public documentation only: it cannot tell the current "
            "version, configuration or status of a system; ask the user, or use a tool made "
            "for it",
        ),
        CommonError(
            pattern=r"\bselect\b[^;]{1,200}?\bfrom\b|\binformation_schema\b"
            r"|\b(execute|run)\s+(the\s+)?(sql|query)\b",
            warning="{tool} cannot execute SQL; use a database tool, or the user",
        ),
    ]


class VmPolicy(BaseModel):
    """How a `vm` run handles bad programs and loops."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    max_instructions: int = Field(200, ge=1)
    """Instructions a program may execute; a loop past it ends the run `budget_exhausted`."""
    repairs: int = Field(2, ge=0, le=5)
    """How often an invalid program is sent back to be fixed before the run falls back to
    `react`."""
    builtins: list[str] = ["llm_generate"]
    """Built-in tools every program may call, whatever the strategy's `tools`: a program's
    steps lean on `llm_generate` to reason over what the other steps found."""
    general_tools: frozenset[str] = frozenset(
        {"llm_generate", "vector_search", "retrieve_knowledge_graph", "wiki_search"}
    )
    """Tools that know only public documentation and general knowledge, whatever a prompt
    asks of them (the StackVM specification's "general tools")."""
    common_errors: list[CommonError] = Field(default_factory=_common_errors)
    """What the specification's "common errors" look like in a general tool's parameters: a
    program that makes one still runs, with a `plan_warning`."""


class PipelinePolicy(BaseModel):
    """What a `pipeline` run works on, and how far it lets the model try."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    dataset: str = "sales"
    """What `load_dataset` loads first (a name in the workspace's data/, or a path)."""
    retrieve: int = Field(3, ge=0)
    """Tools retrieved for each requirement (and for all of them together)."""
    safety: list[str] | None = None
    """Tools always offered; None: the workspace's (`registry/pipeline.yaml`)."""
    max_tools: int = Field(10, ge=1)
    adaptations: int = Field(2, ge=1, le=5)
    """Model adaptations of the plan: the first, and retries carrying the coverage payload."""
    replans: int = Field(1, ge=0, le=5)
    """Adaptations after a step failed or a repair was refused while the plan ran."""
    adapt_covered: bool = True
    """Ask the model for changes to a plan that passes the coverage gate once completed (it
    may add what the requirements do not name). False: such a plan runs as completed, and the
    model is asked only when a requirement is left uncovered or the plan failed as it ran:
    the 1.5B's changes to a passing plan took 62 % of its runs' time on 2 cores."""
    fallback_template: str = "summary"
    """The template when the intent cannot be read."""


class DatasetProtocol(BaseModel):
    """How the pipeline loads its data, and what the analysis tools' results say of it."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    tool: str
    """The tool that loads a dataset; the pipeline's first step calls it."""
    param: str
    """Its parameter naming the dataset (`pipeline.dataset` of the strategy)."""
    step: str
    """The id of the loading step in a plan."""
    frame: str
    """The key of a result naming the data frame a step made."""
    columns: str
    """The key of a result (and of the loaded dataset) listing the frame's columns."""
    date_columns: str
    """The key of the loaded dataset listing its date columns."""
    file: str
    """The key of a result naming a file it wrote (a chart, a table)."""
    preview: str
    """The key of a result holding a table to show in the answer."""
    categories: str | None = None
    """The key of the loaded dataset listing each category column's values (what a filter
    may keep, and words that name a grouping); none: the dataset says nothing of them."""


class PipelineVocabulary(BaseModel):
    """What the `pipeline` planner knows of the workspace's analysis tools
    (`registry/pipeline.yaml`): which parameters name columns, which carry the analysis
    itself, how data is loaded."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    column_params: frozenset[str]
    """Parameters that name columns: the ones a casing repair may touch."""
    semantic_params: frozenset[str]
    """Parameters that carry the analysis itself: a wrong value is never repaired, the plan is
    made again."""
    grouping_params: list[str]
    """Parameters that name what a step groups by."""
    dataset: DatasetProtocol
    safety: list[str] = []
    """Tools a pipeline run always offers (unless its strategy names others)."""
    lowest: list[str] = []
    """Words by which a question asks for the lowest of several groups ("least", "worst"):
    its answer names the lowest first (words or phrases, matched whole, any case)."""
    average: list[str] = []
    """Words by which a question asks for an average ("average", "mean"): requirements that
    read no statistic get a summary, and the answer says the mean first (matched as `lowest`)."""
    share: list[str] = []
    """Words by which a question asks for a part's share of a whole ("what percent of revenue
    did electronics make?"): a filter on a grouped column is dropped, and the answer gives
    each group's share first (matched as `lowest`)."""
    furthest: list[str] = []
    """Words by which a question asks for the group furthest from the groups' average ("which
    month deviates most?"): the answer names it first, above or below (matched as `lowest`)."""


def load_vocabulary(path: Path) -> PipelineVocabulary:
    """Load a workspace's `registry/pipeline.yaml`; a bad field is a `WorkspaceError`."""
    return load_yaml_model(path, PipelineVocabulary)


class Template(BaseModel):
    """A plan skeleton for one intent: its curated tools and ordered steps, with placeholders
    (`{metrics}`, `{metrics[0]}`, `{group_by}`, `{group_by[0]}`, `{time.column}`,
    `{time.grain}`) filled from the question's requirements."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: str
    description: str = Field(min_length=1)
    tools: list[str]
    steps: list[PipelineStep]


class _StrategyBase(BaseModel):
    """What every strategy file gives, whatever its planner."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: str
    """The query type this strategy serves: the file's name without `.yaml`."""
    description: str = Field(min_length=1)
    """When to choose it; the classifier reads this."""
    step_budget: int = Field(gt=0, le=100)
    """Most model turns a run may take."""
    tools: list[str] | Literal["all"] = "all"
    """The strategy's own tools, always offered; `all` offers every tool of the workspace.
    The built-in `finish` is offered too, unless one of these tools ends the run itself
    (`finish_retrieval`): then only if listed here."""
    instructions: str
    """The prompt file (in `prompts/`) with this strategy's instructions."""


_Words = Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]


class ToolTurns(_StrategyBase):
    """A strategy whose model calls tools turn by turn (or falls back to doing so): which
    tools retrieval adds, and what the model is told after their results."""

    retrieve: int = Field(0, ge=0)
    """Also offer up to this many tools retrieved from the workspace for the query."""
    safety: list[str] = []
    """Tools offered whatever retrieval finds (they may exceed `max_tools` by two)."""
    max_tools: int = Field(10, ge=1)
    """The cap on the tools offered: retrieved tools are dropped, worst first, to keep it."""
    min_fit: float = Field(0.0, ge=0.0, le=1.0)
    """When retrieval's fit for the query (`tools_narrowed`'s `fit`) is below this, the model
    is offered only the tools `tools` lists (not `all`, nor tools given in code, nor retrieved
    ones) and `safety`, and is told that no tool fits (`no_tool_fits.j2`); 0 always offers
    them. The fit is computed even with `retrieve: 0`. See the README's tool retrieval
    section for what values mean."""
    after: dict[str, list[str]] = {}
    """Tools that need another's result, e.g. `{run_sql: [ground_schema]}`: a `run_sql` written
    in the same reply as a `ground_schema` before it (whose result it cannot have read, so its
    table names are guesses) is not run; the model is told to read that result first. A tool
    another one needs ends its turn (guard `awaits_result`): what the model writes after its
    call is not read, so the next turn starts from that result."""
    answer_needs: list[str] = []
    """Tools an answer must rest on, e.g. `[run_sql]` for a database copilot: an answer written
    before any of them succeeded is sent back (twice at most, while the step budget
    lasts; guard `unfounded_answer`), then taken with its doubt (`run_finished.doubt`
    `tools_failed`), whatever other calls succeeded (a schema read, a chart). Empty: an answer
    is in doubt only when the run called tools and none succeeded."""
    calls_only: bool = False
    """Every turn calls tools and none answers in text (`ModelRequest.must_call`: the embedded
    model's grammar admits no text, a native-tools server is sent `tool_choice`): the answer
    comes from a tool that ends the run (`finish_retrieval`), and the budget's last step may
    call only those. For strategies whose answer must go through their own tool: told in the
    prompt not to answer in plain text, the 1.5B still answered with a plan of the searches it
    would make, in prose, in 3 of 4 knowledge runs (issue 24)."""
    on_request: dict[str, _Words] = {}
    """Tools offered only when the query, or an earlier user message of its conversation,
    asks for them, each with the words that ask, e.g. `{plot_bar: [chart, bar, compar]}`: a
    word matches the start of one of the query's words, case aside ("Charts", "comparing").
    A small model calls what it is offered: given chart tools after every query, the 1.5B
    copilot drew names as bars, then asked the user what it had already answered, in 3 of
    10 runs (issue 24)."""
    results_nudge: str | None = Field(None, min_length=1, max_length=500)
    """What a model that takes tool results as text (the embedded model, a text-mode server) is
    told after them, at the end of the one user message that lists them; None keeps the
    model's default (to answer in plain text). A strategy that must end with a tool of its
    own says so here. With `answer_needs`, it is told only until one of those calls has
    succeeded; the default follows."""

    def unasked(self, query: str) -> set[str]:
        """The `on_request` tools that `query` does not ask for."""
        return {
            tool
            for tool, words in self.on_request.items()
            if not any(re.search(rf"\b{re.escape(w)}", query, re.IGNORECASE) for w in words)
        }


class FirstCall(BaseModel):
    """A call a `react` run makes before the model's first turn (`ReactStrategy.first_calls`)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    tool: str
    arguments: dict[str, JsonValue] = {}
    """Each argument's value; `{query}` in a text value is the user's question."""

    def arguments_for(self, query: str) -> dict[str, JsonValue]:
        # A plain replacement, not `str.format`: a value may hold other braces (JSON, regexes).
        return {
            name: value.replace("{query}", query) if isinstance(value, str) else value
            for name, value in self.arguments.items()
        }


class ReactStrategy(ToolTurns):
    """Stream a turn, run each tool call the moment it closes, repeat."""

    planner: Literal["react"] = "react"
    first_calls: list[FirstCall] = []
    """Calls made before the model's first turn, as a step of their own, their results in the
    conversation as if the model had made them, e.g. `ground_schema(question="{query}")` for a
    database copilot. A call every run must make first is the run's, not the model's, to
    make: the 1.5B copilot skipped `ground_schema` and guessed at table names (`divorce_rates`
    for a film's rental rate) until its step budget was spent (issue 24)."""


class DagStrategy(ToolTurns):
    """Plan a graph of tool calls, run each node when its dependencies finish."""

    planner: Literal["dag"]
    # Policies are made per strategy (default_factory), not once at import: a model instance
    # made at import builds its schema there, and the first schema built loads pydantic's
    # plugin machinery (importlib.metadata) — a tenth of `import agentrt`.
    dag: DagPolicy = Field(default_factory=DagPolicy)


class VmStrategy(ToolTurns):
    """Write a StackVM program, check it, run it over a variable store."""

    planner: Literal["vm"]
    vm: VmPolicy = Field(default_factory=VmPolicy)


class PipelineStrategy(_StrategyBase):
    """Intent, template, requirements, adaptation and a coverage gate, then execution. Its
    tools are narrowed per requirement (`pipeline.retrieve`), not per query."""

    planner: Literal["pipeline"]
    pipeline: PipelinePolicy = Field(default_factory=PipelinePolicy)


Strategy = Annotated[
    ReactStrategy | DagStrategy | VmStrategy | PipelineStrategy, Field(discriminator="planner")
]
"""One strategy file: how a run of its query type proceeds, and what the model is offered.
Its `planner` (default `react`) picks the variant; a field of another planner is an error."""


def load_strategies(folder: Path) -> dict[str, Strategy]:
    """Load every `*.yaml` in `folder`; a bad file raises `WorkspaceError` naming file and field."""
    return {path.stem: _load_strategy(path) for path in sorted(folder.glob("*.yaml"))}


def load_templates(folder: Path) -> dict[str, Template]:
    """Load every `*.yaml` in `folder` (a workspace's `strategies/templates/`)."""
    return {path.stem: _load_named(path, Template) for path in sorted(folder.glob("*.yaml"))}


def _load_strategy(path: Path) -> Strategy:
    data = _named(path)
    planner = data.setdefault("planner", "react")
    variant = _VARIANTS.get(planner) if isinstance(planner, str) else None
    if variant is None:
        msg = (
            f"{path}: field 'planner': Input should be 'react', 'dag', 'vm' or 'pipeline' "
            f"(got {planner!r})"
        )
        raise WorkspaceError(msg)
    # A field of another planner is named as such: pydantic would call it merely unknown.
    foreign = {
        field: [p for p, v in _VARIANTS.items() if field in v.model_fields]
        for field in data
        if field not in variant.model_fields
    }
    problems = [
        f"field {field!r} does not apply to the {planner} planner (only to {', '.join(owners)})"
        for field, owners in foreign.items()
        if owners
    ]
    if problems:
        msg = f"{path}: {'; '.join(problems)}"
        raise WorkspaceError(msg)
    return load_yaml_model(path, variant, data=data)


def _load_named(path: Path, model: type[Template]) -> Template:
    return load_yaml_model(path, model, data=_named(path))


def _named(path: Path) -> dict[str, Any]:
    """The mapping in `path`, its `name` the file's name (a different one is an error)."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        msg = f"{path}: expected a mapping of fields, got {type(data).__name__}"
        raise WorkspaceError(msg)
    if "name" in data and data["name"] != path.stem:
        msg = f"{path}: field 'name': {data['name']!r} differs from the file name {path.stem!r}"
        raise WorkspaceError(msg)
    return {**data, "name": path.stem}


_VARIANTS: dict[str, type[ReactStrategy | DagStrategy | VmStrategy | PipelineStrategy]] = {
    "react": ReactStrategy,
    "dag": DagStrategy,
    "vm": VmStrategy,
    "pipeline": PipelineStrategy,
}
