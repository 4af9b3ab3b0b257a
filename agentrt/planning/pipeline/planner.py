"""Internal. The `pipeline` planner: a small model gets a correct plan because deterministic
checks, not the model, hold the line.

    load the dataset ─► intent (JSON) ─► template ─► requirements (JSON, closed labels)
        ─► drop what the question has no cue for ─► hold columns and filters to the data
        ─► narrow tools (template ∪ retrieved per requirement ∪ safety)
        ─► bind the template to the requirements (+ a filter step)
        ─► complete it: steps nothing asked for out, a template's step in for each requirement
           no step covers ─► adaptation (JSON changes)
        ─► coverage gate (registry/capabilities.yaml) ─► retry with the exact payload
        ─► still uncovered: complete it again, or fall back to `react`
        ─► execute step by step, with safe repairs logged; semantic ones refused → replan

The model answers three narrow questions under JSON schemas: which template, what the
question asks for, what to change in the plan. Everything else is deterministic: binding
the template's placeholders, dropping analysis, groupings and filters the question gave no
cue for (dropped, never demanded), filtering the rows the question names before anything
reads them, checking that every requirement has a step and every step a requirement (group_by
by an aggregate before any plot, trends by a time-aware step, filters by a step that keeps
exactly their rows), removing unjustified steps, adding the step a template has for a
requirement no step covers (the model is asked to change a plan that passes), repairing what
is safe to repair (a missing data handle, a column's casing, a parameter the template had),
refusing what would change the analysis (a metric, a grouping, a grain).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agentrt.catalog.index import Retrieval, narrow
from agentrt.events import (
    CoverageEvent,
    IntentEvent,
    NarrowedTool,
    PipelineStep,
    PlanAdaptedEvent,
    PlannerFallbackEvent,
    RequirementsEvent,
    ToolsNarrowedEvent,
)
from agentrt.exceptions import PipelineFailed, WorkspaceError
from agentrt.execution import ToolOutcome
from agentrt.models.base import Message, ModelRequest, ToolDefinition
from agentrt.planning.base import PlannerInput, PlannerResult, Retrieve
from agentrt.planning.kernel import Invalid, Kernel
from agentrt.planning.pipeline.adaptation import (
    Adaptation,
    apply_changes,
    bind,
    restore,
    with_filter,
)
from agentrt.planning.pipeline.completion import complete
from agentrt.planning.pipeline.coverage import Coverage, check_coverage
from agentrt.planning.pipeline.repair import Refusal, Repairs
from agentrt.planning.pipeline.requirements import (
    Analysis,
    Grain,
    Output,
    Requirements,
    columns_in_names,
    grain_in_group_by,
    groups_in_columns,
    metrics_in_question,
    of_the_whole,
    on_columns,
    on_values,
    requirement_texts,
    where_by_values,
    with_average,
    with_named_period,
    with_named_values,
    with_time_column,
    without_uncued,
)
from agentrt.planning.react import run_react
from agentrt.strategy import PipelineStrategy, Template
from agentrt.workspace import Workspace

__all__ = ["run_pipeline"]

T = TypeVar("T", bound=BaseModel)

_ADAPTATION = Adaptation.model_json_schema()


async def run_pipeline(
    task: PlannerInput, strategy: PipelineStrategy, workspace: Workspace, retrieve: Retrieve
) -> PlannerResult:
    """Run `task` through the pipeline, over `workspace`'s templates, capability map and
    pipeline vocabulary; `retrieve` finds tools for each requirement."""
    pipeline = _Pipeline(task, strategy, workspace, retrieve)
    return await pipeline.kernel.run(pipeline.run_or_fall_back)


class _Intent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    primary_intent: str
    confidence: float = Field(ge=0, le=1)


@dataclass(slots=True)
class _Execution:
    results: dict[str, ToolOutcome] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)


class _Pipeline:
    def __init__(
        self,
        task: PlannerInput,
        strategy: PipelineStrategy,
        workspace: Workspace,
        retrieve: Retrieve,
    ) -> None:
        self.task = task
        self.ctx = task.ctx
        self.kernel = Kernel(task)
        self.policy = strategy.pipeline
        self.workspace = workspace
        self.retrieve = retrieve
        self.registry = workspace.registry
        self.templates = workspace.templates
        vocabulary = workspace.pipeline
        if vocabulary is None:  # the workspace's load refuses a pipeline strategy without one
            msg = f"{workspace.root}/registry/pipeline.yaml: missing"
            raise WorkspaceError(msg)
        self.vocabulary = vocabulary
        self.protocol = vocabulary.dataset
        self.safety = self.policy.safety if self.policy.safety is not None else vocabulary.safety
        self.repairs = Repairs(self.ctx, task.tools, self.templates, vocabulary)
        self.template: Template | None = None
        """The template of the question's intent, once chosen."""
        self.checked: list[PipelineStep] | None = None
        """The plan as completed by the check, before the model's changes, if it passed the
        gate: run when the changed plan fails."""
        self.loaded: dict[str, Any] = {}
        """The tools' artifacts once the dataset is loaded: where each run of a plan starts."""

    async def run_or_fall_back(self) -> PlannerResult:
        """`run`; when no plan covers the question or none could run, the run goes on turn by
        turn (`react`) over the strategy's tools, as a `dag` or `vm` run that cannot make a
        valid plan does: the checks that let a small model plan must not stop it answering
        (issue 24: three questions next to the main job's ended `error` so)."""
        try:
            return await self.run()
        except PipelineFailed as exc:
            self.ctx.emit(PlannerFallbackEvent, planner="pipeline", to="react", reason=str(exc))
            return await run_react(self.task)

    async def run(self) -> PlannerResult:
        dataset = await self._load()
        template = self.template = await self._intent(dataset)
        requirements = await self._requirements(dataset) if template is not None else None
        if template is None or requirements is None:
            return self.kernel.result("budget_exhausted")
        offered = await self._narrow(template, requirements)
        bound = with_filter(bind(template, requirements), requirements, self._filter_tool())
        steps = await self._adapt(requirements, dataset, offered, bound)
        for replan in range(self.policy.replans + 1):
            if steps is None:
                return self.kernel.result("budget_exhausted")
            done = await self._execute(steps)
            checked = self.checked
            if not isinstance(done, _Execution) and checked not in (None, steps):
                # The model's changes broke a plan the gate had passed (the 1.5B added a bar
                # chart of 731 days, twice, issue 24): run that plan before asking again.
                self.ctx.emit(PlanAdaptedEvent, attempt=0, changes=[], steps=checked)
                steps, done = checked, await self._execute(checked)
            if isinstance(done, _Execution):
                return self.kernel.result("ok", self._answer(requirements, steps, done))
            if replan == self.policy.replans:
                raise PipelineFailed(done.reason)
            payload = f"The plan failed while it ran: {done.reason}"
            steps = await self._adapt(requirements, dataset, offered, steps, payload)
        raise AssertionError("unreachable: the last replan returns or raises")

    # ── the model's three questions ─────────────────────────────────────────────────────

    async def _ask(
        self, purpose: str, prompt: str, model: type[T], schema: dict[str, Any]
    ) -> T | Invalid | None:
        """One question under `schema`; None when the budget is spent."""
        step = self.kernel.next_step()
        if step is None:
            return None
        request = ModelRequest(
            messages=[
                Message(role="system", content=prompt),
                Message(role="user", content=self.task.query),
            ],
            json_schema=schema,
            purpose=purpose,
        )
        return await self.kernel.ask_json(request, model, step=step)

    def _prompt(
        self,
        template: str,
        dataset: dict[str, Any],
        tools: list[ToolDefinition] | None = None,
        **variables: Any,
    ) -> str:
        return self.task.prompt(template, tools or [], dataset=dataset, **variables)

    async def _intent(self, dataset: dict[str, Any]) -> Template | None:
        """The template for the question's intent; None when the budget is spent."""
        names = sorted(self.templates)
        schema = {
            "type": "object",
            "properties": {
                "primary_intent": {"type": "string", "enum": names},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "required": ["primary_intent", "confidence"],
            "additionalProperties": False,
        }
        templates = [self.templates[n] for n in names]
        prompt = self._prompt("pipeline_intent.j2", dataset, templates=templates)
        intent = await self._ask("intent", prompt, _Intent, schema)
        if intent is None:
            return None
        if isinstance(intent, _Intent) and intent.primary_intent in self.templates:
            self.ctx.emit(
                IntentEvent,
                template=intent.primary_intent,
                confidence=intent.confidence,
                method="model",
            )
            return self.templates[intent.primary_intent]
        reason = (
            str(intent.error)
            if isinstance(intent, Invalid)
            else f"unknown template {intent.primary_intent!r}"
        )
        fallback = self.policy.fallback_template
        self.ctx.emit(
            IntentEvent, template=fallback, confidence=0.0, method="fallback", reason=reason
        )
        return self.templates[fallback]

    async def _requirements(self, dataset: dict[str, Any]) -> Requirements | None:
        """What the question asks of the data; None when the budget is spent."""
        schema = Requirements.model_json_schema()
        allowed = {
            "analysis": list(get_args(Analysis)),
            "outputs": list(get_args(Output)),
            "grain": list(get_args(Grain)),
        }
        dates = dataset.get(self.protocol.date_columns) or {}
        categories = self._categories(dataset)
        problem: str | None = None
        found: Requirements | str = ""
        dropped: list[str] = []
        moved: list[str] = []
        for _ in range(2):  # one re-extraction, with the allowed labels spelled out
            prompt = self._prompt(
                "pipeline_requirements.j2",
                dataset,
                allowed=allowed,
                problem=problem,
                categories=categories,
            )
            asked = await self._ask("requirements", prompt, Requirements, schema)
            if asked is None:
                return None
            if isinstance(asked, Invalid):
                found = str(asked.error)
            else:
                told = problem is not None
                found, dropped, moved = self._mended(asked, dataset, categories, told=told)
            if isinstance(found, Requirements):
                break
            problem = found
        else:
            msg = f"the question's requirements could not be read, twice: {problem}"
            raise PipelineFailed(msg)
        found, filled = with_time_column(found, self.task.query, list(dates))
        found, average = with_average(found, self._says(self.vocabulary.average))
        found, whole = of_the_whole(found, self._says(self.vocabulary.share))
        filled += average
        dropped += whole
        self.ctx.emit(
            RequirementsEvent,
            requirements=found.model_dump(mode="json"),
            labels=found.labels(),
            dropped=dropped,
            filled=[*moved, *filled],
        )
        return found

    def _mended(
        self,
        asked: Requirements,
        dataset: dict[str, Any],
        categories: dict[str, list[str]],
        *,
        told: bool,
    ) -> tuple[Requirements | str, list[str], list[str]]:
        """A reading with what is safe to repair repaired and held to the data: the
        requirements or what is wrong, what was dropped, and what was filled or moved.

        :param told: the model was told once what was wrong (and shown the columns)
        """
        columns = list(dataset.get(self.protocol.columns, {}))
        dates = dataset.get(self.protocol.date_columns) or {}
        query = self.task.query
        # What the question gives no cue for is dropped before anything is checked: an
        # invented grouping or filter is never demanded of the model again.
        asked, dropped = without_uncued(asked, query, self.registry.cues, categories)
        asked, named = columns_in_names(asked, columns)
        measures = [c for c in columns if c not in categories and c not in dates]
        asked, metric = metrics_in_question(asked, query, measures)
        asked, grain = grain_in_group_by(asked, columns, list(dates))
        asked, moved = where_by_values(asked, categories)
        asked, values = with_named_values(asked, query, categories)
        asked, period = with_named_period(asked, query, dates)
        if told:
            asked, ungrouped = groups_in_columns(asked, columns)
            dropped += ungrouped
        found = on_columns(asked, columns)
        if isinstance(found, Requirements):
            found = on_values(found, categories, dates)
        return found, dropped, [*named, *metric, *grain, *moved, *values, *period]

    def _categories(self, dataset: dict[str, Any]) -> dict[str, list[str]]:
        """Each category column's values, as the loaded dataset lists them (if it does)."""
        key = self.protocol.categories
        listed = dataset.get(key) if key is not None else None
        if not isinstance(listed, dict):
            return {}
        return {str(c): [str(v) for v in vs] for c, vs in listed.items() if isinstance(vs, list)}

    def _filter_tool(self) -> str | None:
        """The run's tool that serves the `filters` requirement, if it has one."""
        return next((n for n in self.task.tools if self.registry.serves(n, "filters")), None)

    async def _adapt(
        self,
        requirements: Requirements,
        dataset: dict[str, Any],
        offered: list[str],
        steps: list[PipelineStep],
        payload: str | None = None,
    ) -> list[PipelineStep] | None:
        """Complete the plan, let the model change it (unless the completed plan passes and
        the strategy says `adapt_covered: false`), and hold the result to the gate: retries
        carry the exact payload; then steps no requirement justifies are removed, removed steps
        that covered a requirement are put back, the plan is completed again, and a requirement
        still uncovered fails the run. None when the budget is spent."""
        load = self.protocol.step
        if not steps or steps[0].id != load:
            steps = [self._load_step(), *(s for s in steps if s.id != load)]
        steps, removed, added = self._complete(steps, requirements, offered)
        completed = self._coverage(steps, requirements, offered)
        as_completed = completed.ok and payload is None and not self.policy.adapt_covered
        if removed or added or as_completed:
            self._emit_coverage(0, completed, removed, [], added)
        if completed.ok and self.checked is None:
            self.checked = steps
        if as_completed:
            return steps
        before = steps
        tools = self.task.tools
        for attempt in range(1, self.policy.adaptations + 1):
            prompt = self._prompt(
                "pipeline_adapt.j2",
                dataset,
                requirements=requirements.model_dump(mode="json"),
                labels=requirements.labels(),
                steps=[s.model_dump(mode="json") for s in steps],
                tools=[tools[n].definition for n in offered if n in tools],
                payload=payload,
            )
            adaptation = await self._ask("adapt", prompt, Adaptation, _ADAPTATION)
            if adaptation is None:
                return None
            if isinstance(adaptation, Invalid):
                changes = []
                problems = [f"Your answer was not a valid list of changes: {adaptation.error}"]
            else:
                changes = adaptation.changes
                steps, problems = apply_changes(steps, changes)
            self.ctx.emit(
                PlanAdaptedEvent,
                attempt=attempt,
                changes=[c.model_dump(mode="json", exclude_none=True) for c in changes],
                steps=steps,
            )
            coverage = self._coverage(steps, requirements, offered)
            self._emit_coverage(attempt, coverage)
            if coverage.ok and not problems:
                return steps
            payload = "\n".join([coverage.payload(steps), *problems]).strip()
        return self._mend(steps, before, requirements, offered)

    def _mend(
        self,
        steps: list[PipelineStep],
        before: list[PipelineStep],
        requirements: Requirements,
        offered: list[str],
    ) -> list[PipelineStep]:
        """The plan once the model had its retries: steps no requirement justifies removed,
        removed steps of `before` that covered a requirement put back, the plan completed
        again; `PipelineFailed` if a requirement is still uncovered."""
        final = self._coverage(steps, requirements, offered)
        removed = [s.id for s in steps if s.id in final.unjustified or s.tool not in offered]
        steps = [s for s in steps if s.id not in removed]
        steps, restored = restore(steps, before, requirements.labels(), final.covered)
        steps, _, added = self._complete(steps, requirements, offered)
        final = self._coverage(steps, requirements, offered)
        self._emit_coverage(self.policy.adaptations + 1, final, removed, restored, added)
        if final.missing:
            msg = f"no plan covers the question: {', '.join(final.missing)}"
            raise PipelineFailed(msg)
        return steps

    def _coverage(
        self, steps: Sequence[PipelineStep], requirements: Requirements, offered: Sequence[str]
    ) -> Coverage:
        return check_coverage(steps, requirements, self.registry, offered, self.vocabulary)

    def _complete(
        self, steps: Sequence[PipelineStep], r: Requirements, offered: list[str]
    ) -> tuple[list[PipelineStep], list[str], list[str]]:
        """`complete`, from the intent's template first; a tool a step it adds uses joins
        `offered` (retrieval may have missed it, as the capability fill-in of `_narrow` would
        not: another offered tool serves the label, with a placeholder left empty)."""
        chosen = [self.template] if self.template is not None else []
        others = [self.templates[n] for n in sorted(self.templates)]
        plan, removed, added = complete(
            steps,
            r,
            [*chosen, *(t for t in others if t not in chosen)],
            self.registry,
            self.task.tools,
            lambda plan: self._coverage(plan, r, offered),
        )
        offered.extend(dict.fromkeys(s.tool for s in plan if s.tool not in offered))
        return [self._on_dataset(s) if s.id in added else s for s in plan], removed, added

    def _on_dataset(self, step: PipelineStep) -> PipelineStep:
        """A template step that names no frame reads the loaded dataset in its template (those
        meaning a result name it: `data: totals`); added to another plan, it must say so, or
        the repair of a missing handle would give it the frame made just before (a histogram
        of one total)."""
        tool = self.task.tools.get(step.tool)
        frame = self.repairs.dataset_frame
        if (
            tool is None
            or frame is None
            or "data" not in tool.args_model.model_fields
            or "data" in step.params
        ):
            return step
        return step.model_copy(update={"params": {**step.params, "data": frame}})

    def _emit_coverage(
        self,
        attempt: int,
        c: Coverage,
        removed: list[str] | None = None,
        restored: list[str] | None = None,
        added: list[str] | None = None,
    ) -> None:
        self.ctx.emit(
            CoverageEvent,
            attempt=attempt,
            ok=c.ok,
            covered=c.covered,
            missing=c.missing,
            unjustified=c.unjustified,
            removed=removed or [],
            restored=restored or [],
            added=added or [],
        )

    # ── deterministic parts ─────────────────────────────────────────────────────────────

    def _load_step(self) -> PipelineStep:
        """The plan's first step: load the strategy's dataset."""
        protocol = self.protocol
        return PipelineStep(
            id=protocol.step,
            tool=protocol.tool,
            params={protocol.param: self.policy.dataset},
            satisfies=["data"],
        )

    async def _load(self) -> dict[str, Any]:
        """Load the dataset first (a real tool call): its schema informs every prompt."""
        load = self._load_step()
        outcome = await self._run_tool(load.id, load.tool, dict(load.params))
        if outcome.status != "ok" or not isinstance(outcome.output, dict):
            msg = f"the dataset {self.policy.dataset!r} could not be loaded: {outcome.error}"
            raise PipelineFailed(msg)
        self.repairs.remember(outcome.output)
        self.loaded = dict(self.task.executor.storage.artifacts)
        return outcome.output

    async def _narrow(self, template: Template, r: Requirements) -> list[str]:
        """Template tools ∪ tools retrieved for each requirement and for the whole question ∪
        the safety set; then, for a requirement none of those covers (a retrieval miss), the
        run's tools that the capability map says cover it."""
        pool = self.task.tools
        found = Retrieval()
        if self.policy.retrieve:
            # One query per requirement, and the question (whose clauses retrieve too).
            queries = [*requirement_texts(r), self.task.query]
            found = await self.retrieve(queries, self.policy.retrieve)
        offered = narrow(
            template=template.tools,
            retrieved=[(n, score) for n, score in found.tools if n in pool],
            safety=[n for n in self.safety if n in pool],
            cap=self.policy.max_tools,
            duplicates=found.duplicates,
        )
        names = {t.name for t in offered}
        missed = [
            label for label in r.labels() if not any(self.registry.serves(n, label) for n in names)
        ]
        for label in missed:
            for name in pool:
                if name not in names and self.registry.serves(name, label):
                    offered.append(NarrowedTool(name=name, source="capability"))
                    names.add(name)
        self.ctx.emit(ToolsNarrowedEvent, tools=offered, missed=missed, fit=found.fit)
        return [t.name for t in offered]

    async def _execute(self, steps: list[PipelineStep]) -> _Execution | Refusal:
        """Run the plan's steps in order (the dataset is loaded already); a step that fails,
        or cannot run as planned, stops it. Every run of a plan starts from the frames as
        loaded: a step of a failed run that kept a filtered frame under the dataset's name
        must not be read by the next."""
        artifacts = self.task.executor.storage.artifacts
        artifacts.clear()
        artifacts.update(self.loaded)
        self.repairs.rewind()
        step_no = self.kernel.count_step()
        protocol = self.protocol
        done = _Execution()
        for step in steps:
            if step.id == protocol.step:
                continue  # loaded before planning
            params = self.repairs.repair(step, dict(step.params))
            if isinstance(params, Refusal):
                return params
            outcome = await self._run_tool(step.id, step.tool, params, step_no)
            if outcome.status != "ok":
                return Refusal(f"step {step.id} ({step.tool}) failed: {outcome.error}")
            done.results[step.id] = outcome
            output = outcome.output
            if isinstance(output, dict):
                self.repairs.remember(output)
                if isinstance(file := output.get(protocol.file), str):
                    done.files.append(file)
                if isinstance(preview := output.get(protocol.preview), str):
                    done.tables.append(preview)
        return done

    async def _run_tool(
        self, step_id: str, tool: str, params: dict[str, JsonValue], step: int = 0
    ) -> ToolOutcome:
        return await self.kernel.call_tool(
            tool,
            params,
            raw=json.dumps(params, ensure_ascii=False),
            step=step,
            call_id=f"step.{step_id}",
        )

    def _says(self, words: list[str]) -> bool:
        """Whether the question holds one of `words` (or phrases), whole, in any case."""
        query = self.task.query.lower()
        return any(re.search(rf"\b{re.escape(w.lower())}\b", query) for w in words)

    def _answer(self, r: Requirements, steps: list[PipelineStep], done: _Execution) -> str:
        return self.workspace.render(
            "pipeline_answer.j2",
            requirements=r.model_dump(mode="json"),
            lowest_first=self._says(self.vocabulary.lowest),
            average=self._says(self.vocabulary.average),
            furthest=self._says(self.vocabulary.furthest),
            share=self._says(self.vocabulary.share),
            steps=[s.model_dump(mode="json") for s in steps if s.id in done.results],
            files=done.files,
            tables=done.tables,
            results={k: o.output for k, o in done.results.items()},
        ).strip()
