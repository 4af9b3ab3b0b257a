"""The `agentrt` command: run a question live, render and replay trajectories."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich import box
from rich.console import Console
from rich.markdown import Markdown
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
from agentrt.evaluation import EvalResult, EvalSummary, load_questions, summarize
from agentrt.evaluation import evaluate as run_questions
from agentrt.events import (
    ClassifiedEvent,
    Event,
    GuardEvent,
    RunFinishedEvent,
    StrategySelectedEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
)
from agentrt.exceptions import UserError
from agentrt.logs import configure_logging
from agentrt.models.base import Model, ModelRequest
from agentrt.models.scripted import ScriptedModel
from agentrt.settings import AgentSettings
from agentrt.trajectory import Trajectory
from agentrt.workspace import default_workspace_path

app = typer.Typer(
    help="agentrt: an asyncio agent runtime. Run questions, render and replay trajectories.",
    no_args_is_help=True,
    add_completion=False,
)
err = Console(stderr=True, soft_wrap=True)

_FILE = {"exists": True, "dir_okay": False}

DEMO_QUESTION = (
    "How many days are there from 2024-02-10 to 2025-03-01, and what is the square root of 1764?"
)


def main() -> None:
    app()


def _demo_model() -> Model:
    """A scripted stand-in that plays a fixed exchange, streaming it like a model would."""

    def answer(request: ModelRequest) -> str:
        results = {m.tool_call_id: m.content for m in request.messages if m.role == "tool"}
        days, root = results.get("call_1_1", "?"), results.get("call_1_2", "?")
        text = (
            f"From 2024-02-10 to 2025-03-01 there are {days} days; "
            f"the square root of 1764 is {root}."
        )
        return _call("finish", answer=text)

    return ScriptedModel(
        [
            '{"query_type": "exploratory", "language": "eng", "suggested_contexts": []}',
            "I need a date difference and a square root; both can be computed at once.\n"
            + _call("days_between", start="2024-02-10", end="2025-03-01")
            + "\n"
            + _call("calculate", expression="sqrt(1764)"),
            answer,
        ],
        token_delay=0.02,
        name="scripted-demo",
    )


def _call(name: str, **arguments: str) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


MODEL_HELP = (
    "Which model answers: 'local' (the embedded Qwen2.5-Coder-1.5B), 'local:small' (its 0.5B "
    "sibling), 'local:PATH.gguf', 'openai' or 'openai:NAME' (an OpenAI-compatible server, "
    "configured by AGENTRT_OPENAI_* variables), or 'demo' (a scripted recording)."
)


def _load_model(spec: str) -> Model:
    kind, _, rest = spec.partition(":")
    if kind == "demo":
        return _demo_model()
    if kind == "local":
        from agentrt.models.local import DEFAULT_PACK, SMALL_PACK, LocalModel

        return LocalModel({"": DEFAULT_PACK, "small": SMALL_PACK}.get(rest, rest))
    if kind == "openai":
        from agentrt.models.openai import OpenAIModel, OpenAISettings

        return OpenAIModel(OpenAISettings(model=rest) if rest else OpenAISettings())
    msg = f"unknown model {spec!r}: {MODEL_HELP}"
    raise UserError(msg)


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
    ) as progress:
        task = progress.add_task(f"loading {model.name}", total=None)
        model.progress = lambda done, total: progress.update(
            task, description=f"joining the weights of {model.name}", completed=done, total=total
        )
        await model.load()


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
    sessions: Annotated[
        Path | None,
        typer.Option(help="SQLite file keeping sessions, so a later run continues one."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print NDJSON events instead.")] = False,
    trajectories: Annotated[
        Path | None, typer.Option(help="Where to record the run (default: ./trajectories).")
    ] = Path("trajectories"),
    record: Annotated[bool, typer.Option(help="Record the trajectory.")] = True,
) -> None:
    """Answer QUESTION, showing the run live: streamed text, tool calls, the answer.

    Exit status 0 when answered, 3 when the model asks a question back (answer it with the
    same --session and --sessions), 1 when the run failed, 2 on a usage error."""
    configure_logging()
    try:
        agent = Agent(
            workspace,
            model=_load_model(model),
            settings=AgentSettings(
                trajectory_dir=trajectories if record else None,
                session_store=sessions,
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
        status = anyio.run(_consume, agent.model, events, show)
    except UserError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    raise typer.Exit({"ok": 0, "needs_input": 3}.get(status, 1))


async def _consume(
    model: Model, events: AsyncIterator[Event], show: Callable[[Event], None]
) -> str:
    await _prepare(model)
    status = "error"
    async for event in events:
        show(event)
        if isinstance(event, RunFinishedEvent):
            status = event.status
    return status


def _print_json(event: Event) -> None:
    sys.stdout.write(event.model_dump_json() + "\n")
    sys.stdout.flush()


class _Live:
    """Renders events on a terminal as they come."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.at_line_start = True
        self.started: dict[str, float] = {}

    def line(self, text: str) -> None:
        if not self.at_line_start:
            self.console.print()
        self.console.print(text, highlight=False)
        self.at_line_start = True

    def __call__(self, event: Event) -> None:
        c = self.console
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
        elif isinstance(event, RunFinishedEvent):
            asked = event.status == "needs_input"
            if event.answer:
                self.line("")
                title = "question" if asked else "answer"
                c.print(Panel(Markdown(event.answer), title=title, expand=False))
            colour = "green" if event.status == "ok" else "yellow" if asked else "red"
            note = f" — {event.error}" if event.error else ""
            self.line(
                f"[{colour}]{event.status}[/]{note} · {event.steps} steps · "
                f"{event.usage.total_tokens} tokens · {event.timings.total:.2f} s"
            )


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
    file: Annotated[
        Path, typer.Argument(help="A trajectory file (.jsonl).", exists=True, dir_okay=False)
    ],
    workspace: Annotated[
        Path | None, typer.Option(help="Workspace to replay against (default: the recorded one).")
    ] = None,
) -> None:
    """Re-run a trajectory's recorded model outputs through today's code; report the first
    event that differs. Exit status 1 when one does."""
    from agentrt.replay import replay as replay_run

    configure_logging()
    try:
        trajectory = Trajectory.read(file)
        _, difference = anyio.run(lambda: replay_run(trajectory, workspace=workspace))
    except (ValueError, UserError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    out = Console(soft_wrap=True)
    if difference is None:
        out.print(f"[green]no difference[/]: {len(trajectory.events)} events replayed identically")
        return
    out.print(f"[red]first difference[/] at event {difference.index}:")
    out.print("recorded:", json.dumps(difference.recorded, ensure_ascii=False), highlight=False)
    out.print("today:   ", json.dumps(difference.replayed, ensure_ascii=False), highlight=False)
    raise typer.Exit(1)


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
    trajectories: Annotated[
        Path, typer.Option(help="Where every run's trajectory is written.")
    ] = Path("trajectories/eval"),
    as_json: Annotated[
        bool, typer.Option("--json", help="Print every result and the summary as JSON.")
    ] = False,
) -> None:
    """Run a question set and print the pipeline's metrics: requirement coverage, unjustified
    steps, retrieval misses, plan repairs, and requirements and tools against the expected."""
    configure_logging()
    path = dataset or default_workspace_path() / "data" / "analysis_questions.jsonl"
    try:
        questions = load_questions(path)
        agent = Agent(
            workspace, model=_load_model(model), settings=AgentSettings(trajectory_dir=trajectories)
        )
    except UserError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None

    async def main() -> list[EvalResult]:
        await _prepare(agent.model)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as progress:
            task = progress.add_task(f"{path.name} · {agent.model.name}", total=len(questions))
            return await run_questions(agent, questions, on_result=lambda _: progress.advance(task))

    results = anyio.run(main)
    summary = summarize(results)
    if as_json:
        payload = {
            "results": [r.model_dump(mode="json") for r in results],
            "summary": summary.model_dump(mode="json"),
        }
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return
    Console().print(_results_table(results), _summary_table(summary, agent.model.name))


def _results_table(results: list[EvalResult]) -> Table:
    table = Table(
        "question",
        "status",
        "labels",
        "covered",
        "unjustified",
        "missed",
        "repairs",
        "req. P/R",
        "outside allowed",
        box=box.SIMPLE_HEAD,
    )
    for r in results:
        m = r.metrics
        pr = (
            f"{r.requirement_precision:.2f}/{r.requirement_recall:.2f}"
            if r.requirement_precision is not None and r.requirement_recall is not None
            else "-"
        )
        numbers = (
            [
                str(len(m.labels)),
                f"{m.covered}",
                f"{m.unjustified}/{m.steps}",
                str(m.missed),
                str(m.repairs),
            ]
            if m
            else ["-"] * 5
        )
        status = r.status if r.status == "ok" else f"[red]{r.status}[/]"
        table.add_row(r.id, status, *numbers, pr, ", ".join(r.disallowed or []) or "-")
    return table


def _summary_table(s: EvalSummary, model: str) -> Table:
    table = Table(
        "metric", "value", title=f"{s.ok}/{s.questions} runs ok · {model}", box=box.SIMPLE_HEAD
    )
    rates = {
        "requirement coverage rate": s.coverage_rate,
        "unjustified step rate": s.unjustified_step_rate,
        "tool retrieval miss rate": s.retrieval_miss_rate,
        "plan repair rate": s.plan_repair_rate,
        "requirement precision": s.requirement_precision,
        "requirement recall": s.requirement_recall,
        "runs calling a tool outside the allowed": s.disallowed_tool_rate,
    }
    for name, value in rates.items():
        table.add_row(name, "-" if value is None else f"{value:.1%}")
    return table


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
    max_runs: Annotated[int, typer.Option(min=1, help="Runs in progress at once, in all.")] = 32,
    max_runs_per_token: Annotated[
        int, typer.Option(min=1, help="Runs in progress at once for one token.")
    ] = 8,
) -> None:
    """Serve runs over HTTP: SSE or NDJSON streams, trajectories, and a web page at /."""
    configure_logging()
    tokens = tuple(token or ())
    try:
        from agentrt.server import Server, ServerSettings, check_exposure, create_app
    except ImportError as exc:
        err.print(
            f"[red]error:[/] the server needs its extra: pip install 'agentrt[server]' ({exc})"
        )
        raise typer.Exit(2) from None
    try:
        check_exposure(host, tokens)
        agent = Agent(
            workspace,
            model=_load_model(model),
            settings=AgentSettings(trajectory_dir=trajectories),
        )
        application = create_app(
            agent,
            ServerSettings(tokens=tokens, max_runs=max_runs, max_runs_per_token=max_runs_per_token),
        )
    except UserError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    import uvicorn

    # On Ctrl-C the runs in progress are cancelled, their streams ended with run_finished; a
    # response still open 5 s later is cut off.
    server = Server(uvicorn.Config(application, host=host, port=port, timeout_graceful_shutdown=5))

    async def main() -> None:
        await _prepare(agent.model)
        await agent.prepare()  # the tool index, if retrieval needs one: not in the first run
        await server.serve()

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

    from agentrt.exceptions import WorkspaceError
    from agentrt.knowledge.contexts import CONTEXTS_FILE, load_knowledge_config
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
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as progress:
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
