"""The pipeline planner over the default workspace's sales data, driven by a scripted model:
the model answers the three JSON questions, the deterministic parts hold the line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest

from agentrt import (
    Agent,
    AgentSettings,
    CoverageEvent,
    Event,
    IntentEvent,
    PipelineStep,
    PlanAdaptedEvent,
    PlannerFallbackEvent,
    RepairEvent,
    RequirementsEvent,
    ScriptedModel,
    ToolCallEvent,
    ToolFinishedEvent,
    ToolsNarrowedEvent,
    Workspace,
)
from agentrt.planning.pipeline import (
    Analysis,
    Change,
    Filters,
    Output,
    Requirements,
    TimeRequirement,
    apply_changes,
    requirement_labels,
)
from agentrt.trajectory.writer import trajectory_path
from tests.analysis_answers import ASKED, INTENT, NO_CHANGE, QUESTION, adapting_workspace
from tests.helpers import check_stream, last


@pytest.fixture(scope="module")
def default_workspace() -> Workspace:
    return Workspace()


@pytest.fixture(scope="module")
def adapting(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return adapting_workspace(tmp_path_factory.mktemp("adapting"))


def of(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def run(
    workspace: Workspace, tmp_path: Path, *answers: Any, question: str = QUESTION
) -> tuple[list[Event], ScriptedModel]:
    model = ScriptedModel([a if isinstance(a, str) else json.dumps(a) for a in answers])
    agent = Agent(workspace=workspace, model=model, settings=AgentSettings(trajectory_dir=tmp_path))
    events = [e async for e in agent.run(question, strategy="analysis")]
    check_stream(events)
    return events, model


def called(events: list[Event]) -> list[str]:
    return [e.name for e in of(events, ToolCallEvent)]


def adapt_prompts(model: ScriptedModel) -> list[str]:
    return [r.messages[0].content or "" for r in model.requests if r.purpose == "adapt"]


async def test_the_main_question_end_to_end(default_workspace: Workspace, tmp_path: Path) -> None:
    events, _ = await run(default_workspace, tmp_path, INTENT, ASKED, NO_CHANGE)
    end = last(events)
    assert end.status == "ok", end.error
    assert of(events, IntentEvent)[0].template == "time_series_grouped"
    assert of(events, RequirementsEvent)[0].labels == [
        "data",
        "analysis.total",
        "analysis.trend",
        "group_by",
        "time.column",
        "outputs.chart",
        "outputs.table",
    ]
    coverage = of(events, CoverageEvent)
    assert [(c.ok, c.missing, c.unjustified) for c in coverage] == [(True, [], [])]
    assert called(events) == [
        "load_dataset",
        "parse_datetime",
        "aggregate",
        "plot_line",
        "save_dataframe",
    ]
    results = {e.call_id: e for e in of(events, ToolFinishedEvent)}
    totals = results["step.totals"].output
    assert isinstance(totals, dict)
    # Two years of daily rows: the unknown grain resolves to months (24 × 4 regions × 5).
    assert totals["grain"] == "month"
    assert totals["rows"] == 24 * 4 * 5
    chart = Path(str(results["step.chart"].output["file"]))  # type: ignore[index]
    # The chart and the table are written beside the trajectory, named for the run.
    trajectory = trajectory_path(tmp_path, events[0].run_id)
    assert chart.parent == trajectory.with_suffix("")
    assert chart.suffix == ".png"
    assert await anyio.Path(chart).read_bytes() != b""
    answer = end.answer or ""
    assert str(chart) in answer
    assert "| date | region | product_category | revenue |" in answer
    assert await anyio.Path(trajectory).exists()


async def test_analysis_the_question_gives_no_cue_for_is_dropped(
    default_workspace: Workspace, tmp_path: Path
) -> None:
    eager = {**ASKED, "analysis": ["total", "trend", "anomaly", "distribution"]}
    events, _ = await run(default_workspace, tmp_path, INTENT, eager, NO_CHANGE)
    assert last(events).status == "ok"
    requirements = of(events, RequirementsEvent)[0]
    assert requirements.dropped == ["analysis.anomaly", "analysis.distribution"]
    assert not {"detect_anomalies", "plot_histogram"} & set(called(events))


async def test_missing_coverage_gets_one_retry_with_the_exact_payload(
    adapting: Workspace, tmp_path: Path
) -> None:
    drop_totals = {"changes": [{"op": "remove", "step": "totals", "rationale": "not needed"}]}
    put_back = {
        "changes": [
            {
                "op": "add",
                "step": "totals",
                "after": "dates",
                "tool": "aggregate",
                "params": {
                    "metrics": ["revenue"],
                    "group_by": ["region", "product_category"],
                    "time_column": "date",
                    "grain": "unknown",
                    "name": "totals",
                },
                "satisfies": ["analysis.total", "group_by"],
                "rationale": "totals per group and period",
            }
        ]
    }
    events, model = await run(adapting, tmp_path, INTENT, ASKED, drop_totals, put_back)
    assert last(events).status == "ok"
    first, second = of(events, CoverageEvent)
    assert first.missing == ["analysis.total", "group_by=[region, product_category]"]
    assert second.ok
    payload = "Missing coverage: analysis.total, group_by=[region, product_category]"
    assert payload not in adapt_prompts(model)[0]
    assert payload in adapt_prompts(model)[1]
    assert "aggregate" in called(events)


async def test_grouping_after_the_chart_does_not_count(adapting: Workspace, tmp_path: Path) -> None:
    """group_by is met only by an aggregate that precedes plotting; when the model's plan has
    none after its retry, the check adds one where it counts."""
    move = {
        "changes": [
            {"op": "remove", "step": "totals"},
            {
                "op": "add",
                "step": "totals",
                "after": "chart",
                "tool": "aggregate",
                "params": {"metrics": ["revenue"], "group_by": ["region", "product_category"]},
                "satisfies": ["analysis.total", "group_by"],
            },
        ]
    }
    events, _ = await run(adapting, tmp_path, INTENT, ASKED, move, move)
    coverage = [(c.attempt, c.missing, c.added) for c in of(events, CoverageEvent)]
    assert coverage == [
        (1, ["group_by=[region, product_category]"], []),
        (2, ["group_by=[region, product_category]"], []),
        # The model did not mend it: the check puts the template's grouping before the chart.
        (3, [], ["totals_2"]),
    ]
    assert not of(events, PlannerFallbackEvent)
    assert called(events) == [
        "load_dataset",
        "parse_datetime",
        "aggregate",
        "plot_line",
        "aggregate",
        "save_dataframe",
    ]
    assert last(events).status == "ok"


async def test_unjustified_steps_are_named_then_removed(
    adapting: Workspace, tmp_path: Path
) -> None:
    add_anomalies = {
        "changes": [
            {
                "op": "add",
                "step": "spikes",
                "tool": "detect_anomalies",
                "params": {"metric": "revenue"},
                "satisfies": ["analysis.anomaly"],
                "rationale": "spikes are interesting",
            }
        ]
    }
    events, model = await run(adapting, tmp_path, INTENT, ASKED, add_anomalies, NO_CHANGE)
    assert last(events).status == "ok"
    first, second, final = of(events, CoverageEvent)
    assert first.unjustified == second.unjustified == ["spikes"]
    assert final.removed == ["spikes"]
    assert final.ok
    assert "Remove unjustified steps: detect_anomalies" in adapt_prompts(model)[1]
    assert "detect_anomalies" not in called(events)


async def test_safe_repairs_are_logged_and_a_semantic_one_runs_the_checked_plan(
    adapting: Workspace, tmp_path: Path
) -> None:
    """A column's casing is repaired; a metric the data lacks is not (that would change the
    analysis): the plan the gate passed before the model's changes runs instead."""
    sloppy = {
        "changes": [
            {"op": "modify", "step": "dates", "params": {"column": "DATE"}},
            {"op": "modify", "step": "totals", "params": {"metrics": ["profit"]}},
        ]
    }
    events, model = await run(adapting, tmp_path, INTENT, ASKED, sloppy)
    end = last(events)
    assert end.status == "ok", end.error
    repairs = [(r.step, r.param, r.before, r.after, r.applied) for r in of(events, RepairEvent)]
    assert repairs == [
        ("dates", "column", "DATE", "date", True),
        ("totals", "metrics", "profit", None, False),
    ]
    assert "changing metrics would change the analysis" in of(events, RepairEvent)[1].reason
    adapted = [(a.attempt, len(a.changes)) for a in of(events, PlanAdaptedEvent)]
    assert adapted == [(1, 2), (0, 0)]
    assert len(adapt_prompts(model)) == 1  # the model was not asked again
    assert called(events).count("aggregate") == 1  # the refused step never ran


async def test_a_checked_plan_that_fails_as_it_runs_is_replanned_with_why(
    adapting: Workspace, tmp_path: Path
) -> None:
    """Revenue by date as bars: 731 bars do not fit a bar chart. The model, told why, draws
    a line instead."""
    read = {**ASKED, "group_by": ["date"], "time": {}, "analysis": ["compare"]}
    comparative = {"primary_intent": "comparative", "confidence": 0.9}
    line = {"changes": [{"op": "modify", "step": "chart", "tool": "plot_line"}]}
    events, model = await run(
        adapting,
        tmp_path,
        comparative,
        read,
        NO_CHANGE,
        line,
        question="compare revenue by date",
    )
    end = last(events)
    assert end.status == "ok", end.error
    told = adapt_prompts(model)[1]
    assert "The plan failed while it ran: step chart (plot_bar) failed: 'date' has 731" in told
    assert called(events)[-2:] == ["plot_line", "save_dataframe"]


async def test_a_missing_data_handle_is_repaired(adapting: Workspace, tmp_path: Path) -> None:
    add_stats = {
        "changes": [
            {
                "op": "add",
                "step": "stats",
                "tool": "compute_summary_stats",
                "params": {"columns": ["revenue"]},
                "satisfies": ["outputs.table"],
            }
        ]
    }
    events, _ = await run(adapting, tmp_path, INTENT, ASKED, add_stats)
    assert last(events).status == "ok"
    repair = next(r for r in of(events, RepairEvent) if r.step == "stats")
    # The last frame a step made is the one a step without a handle means.
    assert (repair.param, repair.before, repair.after, repair.reason) == (
        "data",
        None,
        "totals",
        "missing data handle",
    )


async def test_labels_outside_the_set_get_one_re_extraction(
    default_workspace: Workspace, tmp_path: Path
) -> None:
    wrong = {**ASKED, "analysis": ["total", "forecast"]}
    events, model = await run(default_workspace, tmp_path, INTENT, wrong, ASKED, NO_CHANGE)
    assert last(events).status == "ok"
    asks = [r.messages[0].content or "" for r in model.requests if r.purpose == "requirements"]
    assert len(asks) == 2
    assert "Your last answer was not valid" in asks[1]
    assert "forecast" in asks[1]

    events, _ = await run(default_workspace, tmp_path, INTENT, wrong, wrong, "Total: 42.")
    (fallback,) = of(events, PlannerFallbackEvent)
    assert fallback.reason.startswith("the question's requirements could not be read, twice")
    assert last(events).answer == "Total: 42."


async def test_a_column_the_data_lacks_is_asked_again(
    default_workspace: Workspace, tmp_path: Path
) -> None:
    typo = {**ASKED, "group_by": ["Region", "product_type"]}
    events, model = await run(default_workspace, tmp_path, INTENT, typo, ASKED, NO_CHANGE)
    assert last(events).status == "ok"
    again = [r.messages[0].content or "" for r in model.requests if r.purpose == "requirements"]
    assert "group_by: there is no column 'product_type'" in again[1]


async def test_an_unreadable_intent_falls_back_and_says_so(
    default_workspace: Workspace, tmp_path: Path
) -> None:
    summary = {**ASKED, "group_by": [], "time": {"column": None}, "analysis": ["summary"]}
    summary["outputs"] = ["table"]
    events, _ = await run(
        default_workspace, tmp_path, "not json", summary, NO_CHANGE, question="summarise revenue"
    )
    intent = of(events, IntentEvent)[0]
    assert (intent.template, intent.method) == ("summary", "fallback")
    assert last(events).status == "ok"
    assert "compute_summary_stats" in called(events)


async def test_a_trend_without_a_time_column_gets_the_data_s_date_column(
    default_workspace: Workspace, tmp_path: Path
) -> None:
    vague = {**ASKED, "time": {"column": None, "grain": "unknown"}}
    events, _ = await run(default_workspace, tmp_path, INTENT, vague, NO_CHANGE)
    requirements = of(events, RequirementsEvent)[0]
    assert requirements.requirements["time"] == {"column": "date", "grain": "unknown"}
    assert requirements.filled == [
        "time.column=date: a trend needs a date column, and the data has one"
    ]
    assert last(events).status == "ok"


async def test_the_narrowed_tools_cover_every_requirement(
    default_workspace: Workspace, tmp_path: Path
) -> None:
    events, _ = await run(default_workspace, tmp_path, INTENT, ASKED, NO_CHANGE)
    narrowed = of(events, ToolsNarrowedEvent)[-1]
    names = [t.name for t in narrowed.tools]
    assert {"load_dataset", "parse_datetime", "aggregate", "plot_line", "save_dataframe"} <= set(
        names
    )
    assert narrowed.missed == []
    assert len(names) <= 10 + 2


async def test_a_plan_that_passes_runs_as_completed(
    default_workspace: Workspace, adapting: Workspace, tmp_path: Path
) -> None:
    """The analysis strategy's `adapt_covered: false`: the completed plan passed the gate, so
    the model is not asked to change it (its changes took 60-80 % of a run on 2 cores); the
    coverage event still says the gate passed, and the run answers as an adapted one does."""
    events, model = await run(default_workspace, tmp_path, INTENT, ASKED)
    end = last(events)
    assert end.status == "ok", end.error
    assert [r.purpose for r in model.requests] == ["intent", "requirements"]
    assert [(c.attempt, c.ok, c.missing) for c in of(events, CoverageEvent)] == [(0, True, [])]
    assert not of(events, PlanAdaptedEvent)
    adapted, asked = await run(adapting, tmp_path, INTENT, ASKED, NO_CHANGE)
    assert [r.purpose for r in asked.requests] == ["intent", "requirements", "adapt"]
    assert called(events) == called(adapted)

    def read(answer: str | None) -> list[str]:  # but for the files' paths, which name the run
        return [line for line in (answer or "").splitlines() if str(tmp_path) not in line]

    assert read(end.answer) == read(last(adapted).answer)
    assert "Files written:" in read(end.answer)


async def test_adaptation_prompts_show_the_plan(adapting: Workspace, tmp_path: Path) -> None:
    events, model = await run(adapting, tmp_path, INTENT, ASKED, NO_CHANGE)
    prompt = adapt_prompts(model)[0]
    assert '- totals: aggregate {"metrics": ["revenue"], "group_by": ["region", ' in prompt
    assert "requirement labels: data, analysis.total, analysis.trend, group_by" in prompt
    steps = of(events, PlanAdaptedEvent)[0].steps
    assert [s.id for s in steps] == ["load", "dates", "totals", "chart", "table"]


def test_every_requirement_label_has_a_map_entry(default_workspace: Workspace) -> None:
    """A label the pipeline can produce without an entry in registry/capabilities.yaml would be
    uncoverable: adding one to `Requirements` must come with its map entry (and its cues)."""
    mapped = default_workspace.registry.capabilities.requirements
    assert [label for label in requirement_labels() if label not in mapped] == []
    every = Requirements(
        metrics=["revenue"],
        group_by=["region"],
        time=TimeRequirement(column="date"),
        analysis=list(get_args(Analysis)),
        filters=Filters(period="2024"),
        outputs=list(get_args(Output)),
    )
    assert sorted(every.labels()) == sorted(requirement_labels())
    assert sorted(default_workspace.registry.cues) == sorted(get_args(Analysis))


def test_restating_a_step_as_an_addition_modifies_it() -> None:
    """Small models add the template's steps again: the same id and tool merge into the step;
    the same id with another tool is a clash, named."""
    steps = [PipelineStep(id="totals", tool="aggregate", params={"metrics": ["revenue"]})]
    restated = Change(op="add", step="totals", tool="aggregate", params={"grain": "month"})
    plan, problems = apply_changes(steps, [restated])
    assert problems == []
    assert plan[0].params == {"metrics": ["revenue"], "grain": "month"}
    clash = Change(op="add", step="totals", tool="plot_bar")
    assert apply_changes(steps, [clash])[1] == ["cannot add step 'totals': a step has that id"]


async def test_a_covering_step_the_model_keeps_removing_is_put_back(
    adapting: Workspace, tmp_path: Path
) -> None:
    """Small models delete template steps they were meant to keep: after the retry, the gate
    restores the removed steps that covered a requirement, in their place, and says so."""
    drop_totals = {"changes": [{"op": "remove", "step": "totals", "rationale": "not needed"}]}
    events, _ = await run(adapting, tmp_path, INTENT, ASKED, drop_totals, NO_CHANGE)
    end = last(events)
    assert end.status == "ok", end.error
    first, second, final = of(events, CoverageEvent)
    assert "group_by=[region, product_category]" in first.missing
    assert not second.ok
    assert (final.ok, final.restored, final.removed) == (True, ["totals"], [])
    assert called(events) == [
        "load_dataset",
        "parse_datetime",
        "aggregate",
        "plot_line",
        "save_dataframe",
    ]


async def test_a_completed_step_leaves_out_an_optional_parameter_it_cannot_fill(
    default_workspace: Workspace, tmp_path: Path
) -> None:
    """A trend with no grouping, planned from a template that draws none: the line chart taken
    from the time-series template has no `{group_by[0]}` for its `color`, which is optional,
    so it is left out (one line) rather than the step refused and the run handed to `react`."""
    summary = {**INTENT, "primary_intent": "summary"}
    asked = {**ASKED, "group_by": [], "analysis": ["trend"], "outputs": ["chart"]}
    events, _ = await run(
        default_workspace, tmp_path, summary, asked, NO_CHANGE, question="the monthly trend"
    )
    assert not of(events, PlannerFallbackEvent)
    assert "chart" in of(events, CoverageEvent)[0].added
    (chart,) = [e for e in of(events, ToolCallEvent) if e.name == "plot_line"]
    assert set(chart.arguments) == {"data", "x", "y"}
    assert last(events).status == "ok"
