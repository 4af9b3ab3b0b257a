"""Internal. Safe repairs of a `pipeline` step's parameters as the plan runs, each logged with its
before and after; a repair that would change the analysis is refused, and the plan is made
again.

    a missing data handle      the frame the steps before it made
    a handle of no frame       the frame the steps before it made
    a column's casing          as the frame spells it
    a column with words around it ("order_revenue")   the one column it holds
    a required parameter       the value a template gives it
    a plan field among the parameters ("after", "rationale")   removed
    an unknown column in a semantic parameter (a metric, a grouping): refused
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import JsonValue

from agentrt.catalog.toolbox import Toolbox
from agentrt.events import PipelineStep, RepairEvent
from agentrt.planning.pipeline.adaptation import is_placeholder
from agentrt.planning.pipeline.requirements import column_in_name
from agentrt.run import RunContext
from agentrt.strategy import PipelineVocabulary, Template

__all__ = ["Refusal", "Repairs"]


_STEP_FIELDS = frozenset({"id", "op", "step", "tool", "after", "rationale", "satisfies"})
"""Fields of a plan step (and of a change) small models write among a step's parameters."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A step that cannot run as planned without changing the analysis."""

    reason: str


class Repairs:
    """The frames a run's steps made so far, and the repairs of the steps still to run."""

    def __init__(
        self,
        ctx: RunContext,
        tools: Toolbox,
        templates: Mapping[str, Template],
        vocabulary: PipelineVocabulary,
    ) -> None:
        self.ctx = ctx
        self.tools = tools
        self.templates = templates
        self.vocabulary = vocabulary
        self.frames: dict[str, list[str]] = {}
        """Data frames the steps made so far, by name: their columns."""
        self.last_frame: str | None = None
        self.dataset_frame: str | None = None
        """The frame the dataset was loaded as (the first one remembered)."""

    def remember(self, output: Mapping[str, JsonValue]) -> None:
        """Note the frame a step's result says it made."""
        protocol = self.vocabulary.dataset
        name, columns = output.get(protocol.frame), output.get(protocol.columns)
        if isinstance(name, str) and isinstance(columns, dict | list):
            self.frames[name] = [str(c) for c in columns]
            self.last_frame = name
            self.dataset_frame = self.dataset_frame or name

    def rewind(self) -> None:
        """Forget the frames made after the dataset's: a plan run again starts where the first
        run started (a step given "the frame the steps before it made" got a frame of the
        failed attempt, issue 24)."""
        dataset = self.dataset_frame
        self.frames = {dataset: self.frames[dataset]} if dataset in self.frames else {}
        self.last_frame = dataset

    def repair(
        self, step: PipelineStep, params: dict[str, JsonValue]
    ) -> dict[str, JsonValue] | Refusal:
        """`params` with the safe repairs made, or why the step cannot run as planned."""
        tool = self.tools.get(step.tool)
        fields = tool.args_model.model_fields if tool is not None else {}
        for key in sorted(set(params) & _STEP_FIELDS):
            if tool is not None and key not in fields:
                self._log(step, key, params.pop(key), None, "a field of the step, not a parameter")
        data = fields.get("data")
        # A step without a handle means the frame the steps before it made, which is not
        # always the tool's default.
        if (
            data is not None
            and "data" not in params
            and self.last_frame not in (None, data.default)
        ):
            self._log(step, "data", None, self.last_frame, "missing data handle")
            params["data"] = self.last_frame
        handle = params.get("data")
        if (
            data is not None
            and isinstance(handle, str)
            and self.frames
            and handle not in self.frames
            and self.last_frame is not None
        ):
            self._log(step, "data", handle, self.last_frame, "no frame has that name")
            params["data"] = self.last_frame
        columns = self.frames.get(str(params.get("data", self.last_frame)))
        if columns is not None:
            for key in sorted(self.vocabulary.column_params & set(params)):
                fixed = self._fix_columns(step, key, params[key], columns)
                if isinstance(fixed, Refusal):
                    return fixed
                params[key] = fixed
        for key, info in fields.items():
            if key not in params and info.is_required():
                default = self._template_default(step.tool, key)
                if default is not None:
                    self._log(step, key, None, default, "default from the template")
                    params[key] = default
        return params

    def _fix_columns(
        self, step: PipelineStep, key: str, value: JsonValue, columns: list[str]
    ) -> JsonValue | Refusal:
        by_lower = {c.lower(): c for c in columns}
        names = value if isinstance(value, list) else [value]
        fixed: list[JsonValue] = []
        for name in names:
            right = by_lower.get(name.lower()) if isinstance(name, str) else None
            held = column_in_name(name, columns) if isinstance(name, str) else None
            if right is not None and right != name:
                self._log(step, key, name, right, "column name casing")
            elif right is None and held is not None:
                self._log(step, key, name, held, "the one column the name holds")
                right = held
            elif right is None and isinstance(name, str) and key in self.vocabulary.semantic_params:
                reason = (
                    f"there is no column {name!r} (the columns are: {', '.join(columns)}); "
                    f"changing {key} would change the analysis"
                )
                self.ctx.emit(
                    RepairEvent, step=step.id, param=key, before=name, reason=reason, applied=False
                )
                return Refusal(f"step {step.id}: {reason}")
            fixed.append(right or name)
        return fixed if isinstance(value, list) else fixed[0]

    def _template_default(self, tool: str, key: str) -> JsonValue:
        """A fixed value some template gives this tool's parameter (not a placeholder)."""
        for template in self.templates.values():
            for s in template.steps:
                value = s.params.get(key)
                if s.tool == tool and value is not None and not is_placeholder(value):
                    return value
        return None

    def _log(
        self, step: PipelineStep, param: str, before: JsonValue, after: JsonValue, reason: str
    ) -> None:
        self.ctx.emit(
            RepairEvent,
            step=step.id,
            param=param,
            before=before,
            after=after,
            reason=reason,
            applied=True,
        )
