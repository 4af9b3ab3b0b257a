"""Record the sample trajectories in trajectories/samples/: real runs of today's code.

    .venv/bin/python scripts/trajectory_samples.py

Each sample is a run of the real agent over a real workspace, its model scripted (the model's
answers are below, as data). The recorded file is copied under a stable name into
`samples/v<format>/<workspace>/`, one folder per workspace so that a folder replays against
one workspace:

    agentrt replay trajectories/samples/v1/testing --workspace tests/workspace

Rerun this when the engine's behaviour changes on purpose: the current format's samples are
replaced. Those of older formats stay, as they are: they hold the reader to every format
agentrt has written.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from agentrt import Agent, AgentSettings, ScriptedModel, Workspace
from agentrt.trajectory.format import FORMAT_VERSION

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "trajectories" / "samples" / f"v{FORMAT_VERSION}"


def call(name: str, **arguments: Any) -> str:
    """A tool call as a model writes it in text (Hermes style)."""
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def classified(query_type: str) -> str:
    return json.dumps({"query_type": query_type, "language": "eng", "suggested_contexts": []})


@dataclass(frozen=True)
class Sample:
    name: str
    workspace: Path
    query: str
    answers: list[str]
    """The model's answers, in call order."""
    strategy: str | None = None
    """Forced; None lets the (scripted) classifier choose."""


SAMPLES_TO_RECORD = [
    Sample(
        "testing/react_tools",
        ROOT / "tests" / "workspace",
        "What is 2 + 3, and what does the data say?",
        [
            classified("exploratory"),
            "Adding, echoing and asking at once. "
            + call("add", a=2, b=3)
            + call("echo", text="hi")
            + call("add", a="two", b=3)
            + call("teleport", to="Mars")
            + call("fail", message="no data for that"),
            "Once more, and a slow one. " + call("add", a=2, b=3) + call("hang"),
            call("finish", answer="2 + 3 = 5; the data says nothing."),
        ],
    ),
    Sample(
        "testing/dag",
        ROOT / "tests" / "workspace",
        "Add 2 and 3, and 1 and 1, then report.",
        [
            json.dumps(
                {
                    "plan": "Two sums; report the first; one lookup that may fail.",
                    "nodes": [
                        {"id": "T1", "tool": "add", "args": {"a": 2, "b": 3}, "depends_on": []},
                        {"id": "T2", "tool": "add", "args": {"a": 1, "b": 1}, "depends_on": []},
                        {
                            "id": "T3",
                            "tool": "echo",
                            "args": {"text": "sum: {T1}, other: ${T2}"},
                            "depends_on": ["T1", "T2"],
                        },
                        {
                            "id": "T4",
                            "tool": "fail",
                            "args": {"message": "lookup failed"},
                            "depends_on": [],
                        },
                        {
                            "id": "T5",
                            "tool": "echo",
                            "args": {"text": "{T4}"},
                            "depends_on": ["T4"],
                        },
                    ],
                }
            ),
            json.dumps({"action": "finish", "answer": "2 + 3 = 5, 1 + 1 = 2.", "reason": "enough"}),
        ],
        strategy="planned",
    ),
    Sample(
        "testing/vm",
        ROOT / "tests" / "workspace",
        "Add 2 and 3 and describe the result.",
        [
            json.dumps(
                {
                    "program": [
                        {
                            "seq_no": 0,
                            "type": "reasoning",
                            "parameters": {
                                "chain_of_thoughts": "Add, then describe.",
                                "dependency_analysis": "in order",
                            },
                        },
                        {
                            "seq_no": 1,
                            "type": "calling",
                            "parameters": {
                                "tool_name": "add",
                                "tool_params": {"a": 2, "b": 3},
                                "output_vars": "total",
                            },
                        },
                        {
                            "seq_no": 2,
                            "type": "jmp",
                            "parameters": {
                                "condition_prompt": "Is ${total} more than 4?",
                                "jump_if_true": 3,
                                "jump_if_false": 4,
                            },
                        },
                        {
                            "seq_no": 3,
                            "type": "calling",
                            "parameters": {
                                "tool_name": "llm_generate",
                                "tool_params": {"prompt": "Describe the number ${total}."},
                                "output_vars": "final_answer",
                            },
                        },
                        {
                            "seq_no": 4,
                            "type": "assign",
                            "parameters": {"final_answer": "${total}"},
                        },
                    ]
                }
            ),
            json.dumps({"result": True, "explanation": "5 is more than 4"}),
            "Five: a small odd prime.",
        ],
        strategy="programmed",
    ),
    Sample(
        "default/react_dates",
        ROOT,
        "How many days are there from 2024-02-10 to 2025-03-01, and what is the square root "
        "of 1764?",
        [
            classified("exploratory"),
            "A date difference and a square root, both at once.\n"
            + call("days_between", start="2024-02-10", end="2025-03-01")
            + call("calculate", expression="sqrt(1764)"),
            call("finish", answer="385 days; the square root of 1764 is 42."),
        ],
    ),
    Sample(
        "default/pipeline",
        ROOT,
        "get revenue totals by region and product type over time",
        [
            json.dumps({"primary_intent": "time_series_grouped", "confidence": 0.9}),
            json.dumps(
                {
                    "metrics": ["revenue"],
                    "group_by": ["region", "product_category"],
                    "time": {"column": "date", "grain": "unknown"},
                    "analysis": ["total", "trend"],
                    "outputs": ["chart", "table"],
                    "constraints": [],
                }
            ),
            json.dumps({"changes": []}),
        ],
        strategy="analysis",
    ),
    Sample(
        "dbcopilot/needs_input",
        ROOT / "workspaces" / "dbcopilot",
        "How did his sales go?",
        [call("ask_user", question="Whose sales do you mean?")],
        strategy="copilot",
    ),
]


async def record(sample: Sample, scratch: Path) -> Path:
    agent = Agent(
        workspace=Workspace(sample.workspace),
        model=ScriptedModel(sample.answers),
        # A workspace need not have `exploratory` when the strategy is named.
        settings=AgentSettings(
            trajectory_dir=scratch, default_strategy=sample.strategy or "exploratory"
        ),
    )
    result = await agent.run(sample.query, strategy=sample.strategy)
    assert result.path is not None
    target = SAMPLES / f"{sample.name}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result.path, target)
    print(f"{target.relative_to(ROOT)}: {result.status}, {len(result.trajectory.events)} events")
    return target


async def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        for sample in SAMPLES_TO_RECORD:
            await record(sample, Path(scratch))


if __name__ == "__main__":
    anyio.run(main)
