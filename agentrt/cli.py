"""Internal. The `agentrt` command: run a question live, render and replay trajectories."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, get_args

import anyio
import typer
from rich import box
from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from agentrt.agent import Agent
from agentrt.eval.folder import EvalFolder, EvalIdentity, EvalReport
from agentrt.eval.metrics import EvalResult, EvalSummary, summarize
from agentrt.eval.questions import EvalQuestion, load_questions
from agentrt.eval.ray import ray_runner
from agentrt.eval.runner import EvalSpec, Evaluator
from agentrt.eval.runner import evaluate as run_questions
from agentrt.events import (
    ApprovalRequestedEvent,
    Approve,
    ClassifiedEvent,
    Decision,
    Event,
    GuardEvent,
    ReasoningDeltaEvent,
    Reject,
    RunFinishedEvent,
    StrategySelectedEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
)
from agentrt.exceptions import UserError
from agentrt.logs import configure_logging
from agentrt.models.base import Model
from agentrt.models.spec import MODEL_HELP
from agentrt.models.spec import load_model as _load_model
from agentrt.resume import read_recording
from agentrt.settings import AgentSettings
from agentrt.trajectory.format import Trajectory
from agentrt.trajectory.replay import Outcome, ReplayReport, ToolSource
from agentrt.workspace import default_workspace_path

app = typer.Typer(
    help="agentrt: an asyncio agent runtime. Run questions, render and replay trajectories.",
    no_args_is_help=True,
    add_completion=False,
)
err = Console(stderr=True, soft_wrap=True)

_FILE = {"exists": True, "dir_okay": False}

_EXIT_CODES = {"ok": 0, "needs_input": 3, "needs_approval": 4}
"""`agentrt run`'s and `agentrt resume`'s exit status by the run's status; any other is 1."""

DEMO_QUESTION = (
    "How many days are there from 2024-02-10 to 2025-03-01, and what is the square root of 1764?"
)


def main() -> None:
    app()


@contextmanager
def _usage_errors() -> Iterator[None]:
    """A `UserError` inside is a usage error: its message on stderr, exit status 2."""
    try:
        yield
    except UserError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None


def _counting(*, disable: bool = False) -> Progress:
    """A progress bar on stderr for work counted in items: description, bar, n/total, time."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=disable,
    )


async def _prepare(model: Model) -> None:
    """Load a local model before the run, showing progress: the first use joins its weights."""
    from agentrt.models.local import LocalModel

    if not isinstance(model, LocalModel):
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err,
        transient=True,
        # Off a terminal a transient bar draws nothing, yet leaves a blank line on stderr.
        disable=not err.is_terminal,
    ) as progress:
        task = progress.add_task(f"loading {model.name}", total=None)
        model.progress = lambda done, total: progress.update(
            task, description=f"joining the weights of {model.name}", completed=done, total=total
        )
        await model.load()


_StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        "--sessions",
        envvar="AGENTRT_STORE",
        help="The session and run store: a SQLite file (or sqlite:///…), or postgresql://… "
        "(the 'postgres' extra), which several servers share: any of them then streams, reads "
        "and cancels a run another one holds. Sessions and runs outlive the process.",
    ),
]


@app.command()
def run(
    question: Annotated[str, typer.Argument(help="The question to answer.")] = DEMO_QUESTION,
    model: Annotated[str, typer.Option(help=MODEL_HELP)] = "local",
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace folder (default: the built-in one).")
    ] = None,
    strategy: Annotated[
        str | None, typer.Option(help="Use this strategy instead of classifying.")
    ] = None,
    session: Annotated[
        str | None, typer.Option(help="Session id, to continue a conversation.")
    ] = None,
    store: _StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print NDJSON events instead.")] = False,
    trajectories: Annotated[
        Path | None, typer.Option(help="Where to record the run (default: ./trajectories).")
    ] = Path("trajectories"),
    record: Annotated[bool, typer.Option(help="Record the trajectory.")] = True,
) -> None:
    """Answer QUESTION, showing the run live: streamed text, tool calls, the answer.

    Exit status 0 when answered, 3 when the model asks a question back (answer it with the
    same --session and --store), 4 when a tool call awaits approval (`agentrt resume`), 1
    when the run failed, 2 on a usage error."""
    configure_logging()
    try:
        agent = Agent(
            workspace=workspace or default_workspace_path(),
            model=_load_model(model),
            settings=AgentSettings(
                trajectory_dir=trajectories if record else None,
                session_store=store,
                # A workspace need not have `exploratory` when the strategy is named.
                default_strategy=strategy or "exploratory",
            ),
        )
        events = agent.run(question, session_id=session, strategy=strategy)
    except UserError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    if model == "demo" and not as_json:
        err.print(
            "[yellow]model: scripted demo[/] — a fixed recording that shows the runtime at work, "
            "not a language model."
        )
    show: Callable[[Event], None] = _print_json if as_json else _Live(Console())
    try:
        status = anyio.run(_consume, agent, events, show)
    except UserError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    raise typer.Exit(_EXIT_CODES.get(status, 1))


async def _consume(
    agent: Agent, events: AsyncIterator[Event], show: Callable[[Event], None]
) -> str:
    await _prepare(agent.model)
    status = "error"
    async with agent:  # starts the MCP servers the workspace's mcp.yaml declares, if any
        async for event in events:
            show(event)
            if isinstance(event, RunFinishedEvent):
                status = event.status
    return status


@app.command()
def resume(
    run_id: Annotated[str, typer.Argument(help="The run to carry on.")],
    approve: Annotated[
        list[str] | None,
        typer.Option(help="Approve this held call (a call id), or `all` of them. Repeatable."),
    ] = None,
    reject: Annotated[
        list[str] | None,
        typer.Option(help="CALL_ID=REASON: reject a held call; the model reads the reason."),
    ] = None,
    arguments: Annotated[
        list[str] | None,
        typer.Option(help="CALL_ID=JSON: approve a held call with these arguments instead."),
    ] = None,
    model: Annotated[str, typer.Option(help=MODEL_HELP)] = "local",
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace folder (default: the run's own).")
    ] = None,
    trajectories: Annotated[
        Path, typer.Option(help="Where the run is recorded (default: ./trajectories).")
    ] = Path("trajectories"),
    as_json: Annotated[bool, typer.Option("--json", help="Print NDJSON events instead.")] = False,
    store: _StoreOption = None,
) -> None:
    """Carry on run RUN_ID from its trajectory: one awaiting approval (decide with --approve,
    --reject, --arguments) or one whose process died. Recorded model answers are not asked
    again, completed tool calls not run again. Exit status as `agentrt run`'s."""
    configure_logging()
    with _usage_errors():
        _, header = read_recording(trajectories, run_id)
        folder = workspace or header.header.workspace
        if folder is None:
            msg = "the run's tools were given in code: resume it there, with agent.resume()"
            raise UserError(msg)
        recorded = header.header.settings
        # The recorded store's URL has no password (the header never keeps one): --store
        # gives it again, as the run's session turn is kept there.
        settings = AgentSettings.model_validate(
            {
                **recorded,
                "trajectory_dir": trajectories,
                "session_store": store or recorded.get("session_store"),
            }
        )
        agent = Agent(workspace=folder, model=_load_model(model), settings=settings)
        decisions = _decisions(header, approve or [], reject or [], arguments or [])
        events = agent.resume(run_id, decisions)
        show: Callable[[Event], None] = _print_json if as_json else _Live(Console())
        status = anyio.run(_consume, agent, events, show)
    raise typer.Exit(_EXIT_CODES.get(status, 1))


def _decisions(
    recording: Trajectory, approve: list[str], reject: list[str], arguments: list[str]
) -> dict[str, Decision]:
    """The command line's decisions by call id (`all`: every call the run holds)."""
    held = [e for e in recording.events if isinstance(e, ApprovalRequestedEvent)]
    decisions: dict[str, Decision] = {}
    for call_id in approve:
        ids = [c.call_id for c in held[-1].calls] if call_id == "all" and held else [call_id]
        decisions |= dict.fromkeys(ids, Approve())
    for given in reject:
        call_id, _, reason = given.partition("=")
        decisions[call_id] = Reject(reason=reason or "rejected")
    for given in arguments:
        call_id, _, text = given.partition("=")
        try:
            edited = json.loads(text)
        except ValueError as exc:
            msg = f"--arguments {call_id}: not JSON ({exc})"
            raise UserError(msg) from None
        if not isinstance(edited, dict):
            msg = f"--arguments {call_id}: give a JSON object of the tool's arguments"
            raise UserError(msg)
        decisions[call_id] = Approve(arguments=edited)
    return decisions


def _print_json(event: Event) -> None:
    sys.stdout.write(event.model_dump_json() + "\n")
    sys.stdout.flush()


class _Live:
    """Renders events on a terminal as they come; the model's reasoning dimmed, in italics,
    under a `thinking` mark, apart from the answer."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.at_line_start = True
        self.started: dict[str, float] = {}
        self.thinking = False
        """Within a run of reasoning deltas."""

    def line(self, text: str) -> None:
        if not self.at_line_start:
            self.console.print()
        self.console.print(text, highlight=False)
        self.at_line_start = True

    def think(self, text: str) -> None:
        if not self.thinking:
            self.line("[dim]thinking ›[/]")
            self.thinking = True
        self.console.print(text, end="", style="dim italic", highlight=False, markup=False)
        self.at_line_start = text.endswith("\n")

    def __call__(self, event: Event) -> None:
        c = self.console
        if isinstance(event, ReasoningDeltaEvent):
            self.think(event.text)
            return
        if self.thinking:
            # The answer (or whatever comes next) starts on a line of its own.
            self.line("")
            self.thinking = False
        if isinstance(event, ClassifiedEvent):
            why = f" ({event.reason})" if event.reason else ""
            self.line(f"[dim]classified: {event.query_type} [{event.method}]{why}[/]")
        elif isinstance(event, StrategySelectedEvent):
            self.line(
                f"[dim]strategy: {event.strategy} · planner {event.planner} · "
                f"budget {event.step_budget} steps[/]"
            )
        elif isinstance(event, TextDeltaEvent):
            c.print(event.text, end="", highlight=False, markup=False)
            self.at_line_start = event.text.endswith("\n")
        elif isinstance(event, ToolCallEvent):
            args = json.dumps(event.arguments, ensure_ascii=False)
            self.line(f"[cyan]→ {event.name}[/] {args}  [dim]{event.call_id}[/]")
        elif isinstance(event, ToolCallInvalidEvent):
            self.line(f"[red]✗ invalid call[/] {event.reason}")
        elif isinstance(event, GuardEvent):
            self.line(f"[yellow]guard[/] {event.call_id}: {event.detail}")
        elif isinstance(event, ToolFinishedEvent):
            mark = "[green]✓[/]" if event.status == "ok" else f"[red]✗ {event.status}[/]"
            result = (
                json.dumps(event.output, ensure_ascii=False)
                if event.status == "ok"
                else event.error
            )
            if result and len(result) > 160:
                result = result[:160] + "…"
            self.line(f"{mark} {event.name} [dim]{event.duration * 1000:.0f} ms[/] → {result}")
        elif isinstance(event, ApprovalRequestedEvent):
            for held in event.calls:
                args = json.dumps(held.arguments, ensure_ascii=False)
                self.line(f"[yellow]awaits approval[/] {held.call_id}: {held.tool} {args}")
        elif isinstance(event, RunFinishedEvent):
            asked = event.status in ("needs_input", "needs_approval")
            if event.answer:
                self.line("")
                title = "question" if asked else "answer"
                c.print(Panel(Markdown(event.answer), title=title, expand=False))
            colour = "green" if event.status == "ok" else "yellow" if asked else "red"
            note = f" — {event.error}" if event.error else ""
            if event.doubt is not None:
                colour, note = "yellow", f" — the answer is in doubt: {_DOUBTS[event.doubt]}"
            self.line(
                f"[{colour}]{event.status}[/]{note} · {event.steps} steps · "
                f"{event.usage.total_tokens} tokens · {event.timings.total:.2f} s"
            )


_DOUBTS: dict[str, str] = {
    "raw_tool_call": "it holds a tool call that was never run",
    "tool_error": "it repeats a failed tool call's error",
    "tools_failed": "every tool call failed",
}


@app.command()
def show(
    file: Annotated[
        Path, typer.Argument(help="A trajectory file (.jsonl).", exists=True, dir_okay=False)
    ],
    raw: Annotated[
        bool, typer.Option(help="Print the Markdown source instead of rendering it.")
    ] = False,
) -> None:
    """Render a recorded trajectory as Markdown."""
    try:
        markdown = Trajectory.read(file).to_markdown()
    except ValueError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    if raw or not sys.stdout.isatty():
        sys.stdout.write(markdown)
    else:
        Console().print(Markdown(markdown))


@app.command()
def replay(
    path: Annotated[
        Path,
        typer.Argument(
            help="A trajectory file (.jsonl), or a folder: every *.jsonl under it.",
            exists=True,
            metavar="PATH",
        ),
    ],
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace to replay against (default: the recorded one).")
    ] = None,
    tools: Annotated[
        ToolSource,
        typer.Option(
            help="'live' runs today's tools; 'recorded' runs none and answers each call with "
            "the result the trajectory recorded for it (checks the engine alone)."
        ),
    ] = "live",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print every run's outcome and a summary as JSON.")
    ] = False,
) -> None:
    """Re-run recorded trajectories with their recorded model outputs through today's code;
    report for each whether it replays the same, where it first differs, or why it could not
    be replayed. Exit status 0 when every run is the same, 1 when one differs or could not be
    replayed, 2 on a usage error."""
    from agentrt.trajectory.replay import replay_files, trajectory_files

    configure_logging()
    with _usage_errors():
        files = trajectory_files(path)
    out = Console(soft_wrap=True, highlight=False)
    with _counting(disable=len(files) < 2) as progress:
        task = progress.add_task("replaying", total=len(files))
        # On one screen, lines printed beside the bar must go through its console, which
        # keeps them above it; piped, they go to stdout as usual.
        lines = progress.console if out.is_terminal and err.is_terminal else out

        def done(report: ReplayReport) -> None:
            progress.advance(task)
            if not as_json:
                _print_replay(lines, report)

        reports = anyio.run(
            lambda: replay_files(files, workspace=workspace, tools=tools, on_report=done)
        )
    _print_replay_summary(out, reports, tools, as_json=as_json)
    raise typer.Exit(0 if all(r.outcome == "same" for r in reports) else 1)


def _print_replay_summary(
    out: Console, reports: list[ReplayReport], tools: ToolSource, *, as_json: bool
) -> None:
    """How many runs replayed the same, differ, or could not be replayed (as JSON: with
    every run's report)."""
    counts = Counter(r.outcome for r in reports)
    if as_json:
        payload = {
            "tools": tools,
            "runs": [r.model_dump(mode="json") for r in reports],
            "summary": {"runs": len(reports), **{o: counts[o] for o in get_args(Outcome)}},
        }
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
    else:
        out.print(
            f"{len(reports)} run(s), tools {tools}: {counts['same']} same, "
            f"{counts['differs']} differ, {counts['error']} could not be replayed"
        )


def _print_replay(out: Console, report: ReplayReport) -> None:
    """One run's outcome: a line, for a difference or an error a second, indented; and one
    for each MCP server whose tools changed since the run."""
    path = escape(report.path)
    if report.outcome == "same":
        line = f"[green]same[/]    {path}: no difference in {report.events} events"
        out.print(line, highlight=False)
    else:
        if report.outcome == "differs":
            assert report.difference is not None
            seq = report.difference.seq
            where = "after the last event" if seq is None else f"at event {seq}"
            head, detail = f"[red]differs[/] {path}", f"{where}: {report.difference.summary()}"
        else:
            head, detail = f"[yellow]error[/]   {path}", report.error or ""
        out.print(head, highlight=False)
        out.print(" " * 8 + detail, markup=False, highlight=False)
    for change in report.mcp_changes:
        out.print(" " * 8 + change, markup=False, highlight=False)


class EvalBackend(StrEnum):
    """Where `agentrt eval` runs its questions."""

    local = "local"
    ray = "ray"


@app.command(name="eval")
def evaluate(
    dataset: Annotated[
        Path | None,
        typer.Argument(
            help="A question set (.jsonl; default: the built-in analysis regression set).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    model: Annotated[str, typer.Option(help=MODEL_HELP)] = "local",
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace folder (default: the built-in one).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Output folder: results as they finish, every trajectory, results.json and "
            "report.html (default: trajectories/eval/<dataset name>)."
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Questions running at once.")] = 4,
    restart: Annotated[
        bool, typer.Option(help="Forget the results already in the output folder; run all.")
    ] = False,
    backend: Annotated[
        EvalBackend, typer.Option(help="Run here, or as Ray tasks (needs the 'ray' extra).")
    ] = EvalBackend.local,
    address: Annotated[
        str | None,
        typer.Option(help="With --backend ray: the cluster's address (default: a local Ray)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print every result and the summary as JSON.")
    ] = False,
) -> None:
    """Run a question set and score every run: answers (exact match, F1), tools (precision,
    recall, trajectory match), steps, tokens, latency, and the pipeline's metrics.

    Results are kept as they finish, so a rerun with the same output folder runs only the
    questions not done yet (--restart to run them all again)."""
    configure_logging()
    path = (dataset or default_workspace_path() / "data" / "analysis_questions.jsonl").resolve()
    folder = EvalFolder(out or Path("trajectories") / "eval" / path.stem)
    if address is not None and backend is not EvalBackend.ray:
        err.print("[red]error:[/] --address is for --backend ray")
        raise typer.Exit(2)
    root = workspace.resolve() if workspace else None
    with _usage_errors():
        questions = load_questions(path)
        evaluator = Evaluator(EvalSpec(model=model, workspace=root, output=folder.root.resolve()))
        evaluator.check(questions)
        identity = EvalIdentity(dataset=str(path), model=model, workspace=root and str(root))
        done = folder.open(identity, restart=restart)
    label = f"{path.name} · {model} · {backend.value}"
    runner = _EvalRun(evaluator, folder, label, backend, address, concurrency)
    results = _run_eval(questions, done, runner)
    report = EvalReport(evaluation=identity, summary=summarize(results), results=results)
    _show_eval_report(folder, report, as_json=as_json)


def _show_eval_report(folder: EvalFolder, report: EvalReport, *, as_json: bool) -> None:
    """Write the report into the folder (JSON and HTML); print it as tables, or as JSON."""
    folder.write_report(report)
    _write_html_report(folder, report)
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    results = report.results
    tables = [_results_table(results), _summary_table(report.summary, report.evaluation.model)]
    if any(r.metrics for r in results):
        tables.insert(1, _pipeline_table(results))
    Console().print(*tables)
    err.print(f"results: {folder.results_json} · report: {folder.report_html}", highlight=False)


def _run_eval(
    questions: list[EvalQuestion], done: dict[str, EvalResult], runner: _EvalRun
) -> list[EvalResult]:
    """Every question's result, in order: those `done` already, the others run now."""
    todo = [q for q in questions if q.id not in done]
    if len(todo) < len(questions):
        err.print(
            f"{len(questions) - len(todo)} of {len(questions)} already done, running {len(todo)}"
        )
    try:
        with _usage_errors():
            fresh = {r.id: r for r in anyio.run(runner.run, todo, len(questions))}
    except KeyboardInterrupt:
        err.print(
            "interrupted: the finished results are kept in "
            f"{runner.folder.results_log}; rerun to resume"
        )
        raise typer.Exit(130) from None
    return [done.get(q.id) or fresh[q.id] for q in questions]


@dataclass(frozen=True, slots=True)
class _EvalRun:
    """How `agentrt eval` runs its questions: where, how many at once, where results go."""

    evaluator: Evaluator
    folder: EvalFolder
    label: str
    backend: EvalBackend
    address: str | None
    concurrency: int

    async def run(self, todo: list[EvalQuestion], total: int) -> list[EvalResult]:
        """Run `todo` (of `total` questions), each result kept in the folder as it comes."""
        with ExitStack() as stack:
            if self.backend is EvalBackend.ray:
                spec = self.evaluator.spec
                run_one = stack.enter_context(ray_runner(spec, address=self.address))
            else:
                await _prepare(self.evaluator.models())
                run_one = self.evaluator.run
            progress = stack.enter_context(_counting())
            task = progress.add_task(self.label, total=total, completed=total - len(todo))

            def finished(result: EvalResult) -> None:
                self.folder.append(result)
                progress.advance(task)

            return await run_questions(
                todo, run_one, concurrency=self.concurrency, on_result=finished
            )


def _write_html_report(folder: EvalFolder, report: EvalReport) -> None:
    """Write report.html; without matplotlib, say what is missing and go on."""
    from agentrt.eval.report import render_report

    try:
        folder.report_html.write_text(render_report(report), encoding="utf-8")
    except UserError as exc:
        err.print(f"[yellow]no report.html:[/] {exc}")


def _results_table(results: list[EvalResult]) -> Table:
    table = Table(
        "question",
        "status",
        "exact",
        "F1",
        "output",
        "tools P/R",
        "traj.",
        "steps",
        "tokens",
        "secs",
        box=box.SIMPLE_HEAD,
        caption="output: the share of expected output fields right; traj.: the tools called "
        "match the expected ones",
    )
    for r in results:
        status = r.status if r.status == "ok" else f"[red]{r.status}[/]"
        tools = (
            f"{r.tool_precision:.2f}/{r.tool_recall:.2f}"
            if r.tool_precision is not None and r.tool_recall is not None
            else "-"
        )
        table.add_row(
            r.id,
            status,
            "-" if r.exact_match is None else "yes" if r.exact_match else "no",
            "-" if r.f1 is None else f"{r.f1:.2f}",
            "-" if r.output_fields is None else f"{r.output_fields:.0%}",
            tools,
            "-" if r.trajectory_match is None else "yes" if r.trajectory_match else "no",
            str(r.steps),
            str(r.tokens),
            f"{r.latency:.2f}",
        )
    return table


def _pipeline_table(results: list[EvalResult]) -> Table:
    table = Table(
        "question",
        "labels",
        "covered",
        "unjustified",
        "missed",
        "repairs",
        "req. P/R",
        "outside allowed",
        title="pipeline",
        box=box.SIMPLE_HEAD,
    )
    for r in results:
        m = r.metrics
        if m is None:
            continue
        pr = (
            f"{r.requirement_precision:.2f}/{r.requirement_recall:.2f}"
            if r.requirement_precision is not None and r.requirement_recall is not None
            else "-"
        )
        table.add_row(
            r.id,
            str(len(m.labels)),
            f"{m.covered}",
            f"{m.unjustified}/{m.steps}",
            str(m.missed),
            str(m.repairs),
            pr,
            ", ".join(r.disallowed or []) or "-",
        )
    return table


def _summary_table(s: EvalSummary, model: str) -> Table:
    doubtful = f" (+{s.doubtful} ok, answer in doubt)" if s.doubtful else ""
    title = f"{s.ok}/{s.questions} runs ok{doubtful} · {model}"
    table = Table("metric", "value", title=title, box=box.SIMPLE_HEAD)
    percent, two, one = "{:.1%}", "{:.2f}", "{:.1f}"
    rows = [
        ("answer exact match", s.exact_match_rate, percent),
        ("answer F1", s.f1, two),
        ("output fields right", s.output_fields, percent),
        ("outputs with every field right", s.output_exact_rate, percent),
        ("tool precision", s.tool_precision, two),
        ("tool recall", s.tool_recall, two),
        ("trajectory match", s.trajectory_match_rate, percent),
        ("steps per run", s.steps, one),
        ("tokens per run", s.tokens, "{:.0f}"),
        ("latency, mean", s.latency, "{:.2f} s"),
        ("latency, p95", s.latency_p95, "{:.2f} s"),
        ("requirement coverage rate", s.coverage_rate, percent),
        ("unjustified step rate", s.unjustified_step_rate, percent),
        ("tool retrieval miss rate", s.retrieval_miss_rate, percent),
        ("plan repair rate", s.plan_repair_rate, percent),
        ("requirement precision", s.requirement_precision, percent),
        ("requirement recall", s.requirement_recall, percent),
        ("runs calling a tool outside the allowed", s.disallowed_tool_rate, percent),
    ]
    for name, value, form in rows:
        # What the question set gave nothing to measure against is left out.
        if value is not None:
            table.add_row(name, form.format(value))
    return table


_WorkersOption = Annotated[
    int,
    typer.Option(
        min=1, help="Server processes on the one port (more than 1 needs a postgresql store)."
    ),
]


@app.command()
def serve(
    host: Annotated[
        str, typer.Option(help="Address to listen on; beyond loopback a token is required.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).")] = 8000,
    model: Annotated[str, typer.Option(help=MODEL_HELP)] = "local",
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace folder (default: the built-in one).")
    ] = None,
    token: Annotated[
        list[str] | None,
        typer.Option(
            envvar="AGENTRT_TOKEN",
            help="A bearer token clients must send (repeat for several; AGENTRT_TOKEN may hold "
            "several, separated by spaces).",
        ),
    ] = None,
    trajectories: Annotated[
        Path, typer.Option(help="Where runs are recorded and read back from.")
    ] = Path("trajectories"),
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A host name (as clients' Host header has it) to answer to besides localhost, "
            "127.0.0.1 and [::1] (repeat for several; '*': any). Without a token, other names "
            "are refused: a web page could otherwise reach the server by DNS rebinding.",
        ),
    ] = None,
    max_runs: Annotated[int, typer.Option(min=1, help="Runs in progress at once, in all.")] = 32,
    max_runs_per_token: Annotated[
        int, typer.Option(min=1, help="Runs in progress at once for one token.")
    ] = 8,
    store: _StoreOption = None,
    workers: _WorkersOption = 1,
) -> None:
    """Serve runs over HTTP: SSE or NDJSON streams, trajectories, and a web page at /."""
    configure_logging()
    options = _ServeOptions(
        model=model,
        workspace=workspace,
        trajectories=trajectories,
        settings={
            "tokens": tuple(token or ()),
            "max_runs": max_runs,
            "max_runs_per_token": max_runs_per_token,
            "allowed_hosts": tuple(allowed_host or ()),
            "store": store,
        },
    )
    with _usage_errors():
        application, agent = _serve_build(options, host, workers)
    if workers > 1:
        _serve_workers(options, host, port, workers)
    else:
        _serve_app(application, agent, host, port)


@dataclass(frozen=True)
class _ServeOptions:
    """What each server process of `agentrt serve` builds its app from (picklable: a worker
    process is given it)."""

    model: str
    workspace: Path | None
    trajectories: Path
    settings: dict[str, Any]
    """The `ServerSettings`."""

    def app(self) -> tuple[Any, Agent]:
        """The app (`create_app`) and its agent."""
        from agentrt.server import ServerSettings, create_app

        agent = Agent(
            workspace=self.workspace or default_workspace_path(),
            model=_load_model(self.model),
            settings=AgentSettings(
                trajectory_dir=self.trajectories, session_store=self.settings["store"]
            ),
        )
        return create_app(agent, ServerSettings(**self.settings)), agent


def _serve_build(options: _ServeOptions, host: str, workers: int) -> tuple[Any, Agent]:
    """Check the options and build the app once (in this process, so that a mistake is one
    error here rather than one per worker).

    :raises UserError: a server exposed without a token, workers without a shared store, a
        store that cannot be reached, …
    """
    try:
        from agentrt.server import check_exposure
    except ImportError as exc:
        msg = f"the server needs its extra: pip install 'agentrt[server]' ({exc})"
        raise UserError(msg) from None
    check_exposure(host, options.settings["tokens"])
    store: str | None = options.settings["store"]
    postgres = store is not None and store.partition("://")[0].startswith("postgres")
    if workers > 1 and not postgres:
        msg = (
            f"--workers {workers} needs a store the workers share: give --store "
            "postgresql://… (each worker would otherwise see only its own runs)"
        )
        raise UserError(msg)
    if store is not None and postgres:
        from agentrt.server.relay import check

        anyio.run(check, store)
    return options.app()


def _serve_workers(options: _ServeOptions, host: str, port: int, workers: int) -> None:
    """Serve with `workers` processes on one socket, uvicorn's supervisor restarting any that
    dies; each builds its own app from `options` (its own agent, relayed through the store),
    and on Ctrl-C cancels its runs first, as a lone `agentrt serve` does."""
    import functools

    import uvicorn

    from agentrt.server.serve import run_workers

    config = uvicorn.Config(
        functools.partial(_worker_app, options),
        factory=True,
        host=host,
        port=port,
        workers=workers,
        timeout_graceful_shutdown=5,
    )
    sock = config.bind_socket()
    # Listening before the workers start: a client that comes meanwhile waits in the kernel's
    # queue for one to take it, rather than being refused.
    sock.listen(config.backlog)
    run_workers(config, [sock])


def _worker_app(options: _ServeOptions) -> Any:
    """The app of one worker process of `agentrt serve --workers N`."""
    from agentrt.server.serve import freeze_startup

    configure_logging()
    application = options.app()[0]
    freeze_startup()
    return application


def _serve_app(application: Any, agent: Agent, host: str, port: int) -> None:
    """Serve until a stop signal, then exit as a program stopped by it: 128 + the signal."""
    import uvicorn

    from agentrt.server import Server
    from agentrt.server.serve import freeze_startup

    # On Ctrl-C the runs in progress are cancelled, their streams ended with run_finished; a
    # response still open 5 s later is cut off.
    server = Server(uvicorn.Config(application, host=host, port=port, timeout_graceful_shutdown=5))

    async def main() -> None:
        await _prepare(agent.model)
        await agent.prepare()  # the tool index, if retrieval needs one: not in the first run
        freeze_startup()
        await server.serve()

    # uvloop, where the `server` extra installed it, as uvicorn picks when it makes the loop
    # (here anyio makes it): with httptools, 13-15 % less CPU per streamed event.
    anyio.run(main, backend_options={"use_uvloop": importlib.util.find_spec("uvloop") is not None})
    if server.stopped_by is not None:
        # As a program stopped by that signal reports it: 130 for Ctrl-C, 143 for SIGTERM.
        raise typer.Exit(128 + server.stopped_by)


@app.command(name="export-otel")
def export_otel(
    path: Annotated[
        Path,
        typer.Argument(
            help="A trajectory file (.jsonl), or a folder: every *.jsonl under it.",
            exists=True,
            metavar="PATH",
        ),
    ],
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="The OTLP/HTTP collector's URL ('/v1/traces' is added to one without a path). "
            "Default: OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(help="Write the spans to this file instead, one JSON object a line."),
    ] = None,
    include_content: Annotated[
        bool, typer.Option(help="Record queries, model text, tool arguments and results.")
    ] = False,
) -> None:
    """Turn stored trajectories into OpenTelemetry GenAI spans (the ones a live run traced with
    `instrument=` gives) and send them to an OTLP/HTTP collector, or write them to a file.
    Exit status 1 when a file is not a trajectory or the collector did not take the spans."""
    from agentrt.trajectory.replay import trajectory_files

    configure_logging()
    with _usage_errors():
        if endpoint is not None and output is not None:
            msg = "give --endpoint or --output, not both"
            raise UserError(msg)
        files = trajectory_files(path)
    try:
        from agentrt.otel import ExportFailed, export_trajectories, jsonl_exporter, otlp_exporter
    except ImportError as exc:
        err.print(f"[red]error:[/] export-otel needs: pip install 'agentrt[otel]' ({exc})")
        raise typer.Exit(2) from None
    with ExitStack() as stack:
        if output is not None:
            exporter = jsonl_exporter(stack.enter_context(output.open("w", encoding="utf-8")))
        else:
            exporter = otlp_exporter(endpoint)
        where = str(output) if output is not None else (endpoint or "the OTLP endpoint")
        try:
            report = export_trajectories(files, exporter, include_content=include_content)
        except ValueError as exc:
            err.print(f"[red]error:[/] {exc}", highlight=False)
            raise typer.Exit(1) from None
        except ExportFailed as exc:
            # The exporter has logged why (not reachable, or the status it was refused with).
            err.print(f"[red]error:[/] {exc} ({where})", highlight=False)
            raise typer.Exit(1) from None
    Console(soft_wrap=True, highlight=False).print(
        f"{report.runs} run(s), {report.spans} span(s) → {where}"
    )


@app.command(name="mcp")
def mcp_stdio(
    model: Annotated[str, typer.Option(help=MODEL_HELP)] = "local",
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace folder (default: the built-in one).")
    ] = None,
    store: _StoreOption = None,
    trajectories: Annotated[
        Path | None, typer.Option(help="Where to record runs (default: ./trajectories).")
    ] = Path("trajectories"),
    record: Annotated[bool, typer.Option(help="Record the trajectories.")] = True,
) -> None:
    """Serve the agent as an MCP server over stdin and stdout, as MCP hosts start one: a tool
    `ask`, and `ask_<strategy>` per strategy. Nothing but protocol frames goes to stdout."""
    configure_logging()
    try:
        from agentrt.mcp.server import mcp_server, serve_stdio
    except ImportError as exc:
        err.print(f"[red]error:[/] MCP needs its extra: pip install 'agentrt[mcp]' ({exc})")
        raise typer.Exit(2) from None
    with _usage_errors():
        agent = Agent(
            workspace=workspace or default_workspace_path(),
            model=_load_model(model),
            settings=AgentSettings(
                trajectory_dir=trajectories if record else None, session_store=store
            ),
        )
        server = mcp_server(agent)

    async def main() -> None:
        await _prepare(agent.model)
        async with agent:  # the workspace's own MCP servers (mcp.yaml), while this one serves
            await agent.prepare()  # the tool index, if retrieval needs one: not in the first call
            await serve_stdio(server)

    anyio.run(main)


@app.command()
def ingest(
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace folder with a contexts.yaml (default: built-in).")
    ] = None,
    context: Annotated[
        list[str] | None, typer.Option("--context", "-c", help="Only this context (repeatable).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Read every file again, changed or not.")] = False,
) -> None:
    """Read the workspace's contexts into its store: chunks in SQLite (FTS5 for keywords),
    their vectors in FAISS. Only files whose content changed since the last ingest are read."""
    from rich.progress import TaskID

    from agentrt.contexts import CONTEXTS_FILE, load_knowledge_config
    from agentrt.exceptions import WorkspaceError
    from agentrt.knowledge.ingest import ingest as ingest_contexts
    from agentrt.knowledge.search import KnowledgeBase
    from agentrt.workspace import default_workspace_path

    configure_logging()
    root = (workspace or default_workspace_path()).resolve()
    try:
        config = load_knowledge_config(root)
        if config is None:
            msg = f"workspace {root} declares no contexts: add a {CONTEXTS_FILE}"
            raise UserError(msg)
        kb = KnowledgeBase(config)
        with _counting() as progress:
            tasks: dict[str, TaskID] = {}

            def advance(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = progress.add_task(stage, total=total)
                progress.update(tasks[stage], completed=done, total=total)

            report = ingest_contexts(kb, context, force=force, progress=advance)
    except (UserError, WorkspaceError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    out = Console(soft_wrap=True)
    out.print(
        f"{len(report.added)} added, {len(report.updated)} updated, {report.unchanged} "
        f"unchanged, {len(report.removed)} removed; {report.embedded} chunk(s) embedded "
        f"→ {config.store_path}"
    )
    for skipped in report.skipped:
        err.print(f"[yellow]skipped:[/] {skipped}", highlight=False)
    raise typer.Exit(1 if report.skipped else 0)
