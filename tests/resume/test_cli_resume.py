"""`agentrt resume`, run as a user runs it (a real process), on a run held for approval in a
workspace folder, and its usage errors."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from agentrt import (
    Agent,
    AgentSettings,
    RunFinishedEvent,
    RunResumedEvent,
    ScriptedModel,
    event_adapter,
)
from tests.helpers import call
from tests.test_cli import agentrt

SEND_TOOL = '''
from agentrt import tool


@tool(requires_approval=True, ends_run=True)
def send(answer: str) -> str:
    """Send the answer to the customer.

    Args:
        answer: What to send.
    """
    return answer
'''

STRATEGY = """description: Answer the customer.
planner: react
step_budget: 3
tools: [send]
instructions: testing.j2
"""


def held_run(tmp_path: Path) -> Path:
    """A workspace whose `send` needs approval, and a run (`held-1`) waiting on it; the
    trajectory folder."""
    workspace = tmp_path / "workspace"
    shutil.copytree(Path(__file__).parents[1] / "models" / "workspace", workspace)
    for old in (workspace / "strategies").glob("*.yaml"):
        old.unlink()
    (workspace / "strategies" / "answer.yaml").write_text(STRATEGY)
    (workspace / "tools" / "send.py").write_text(SEND_TOOL)
    (workspace / "registry" / "tools" / "send.yaml").write_text(
        "- {name: send, description: Send the answer., capabilities: [arithmetic], "
        "params: [answer]}\n"
    )
    folder = tmp_path / "trajectories"
    model = ScriptedModel([call("send", answer="Your parcel left today.")])
    agent = Agent(model, workspace=workspace, settings=AgentSettings(trajectory_dir=folder))
    result = asyncio.run(agent.run("Where is my parcel?", run_id="held-1"))
    assert result.status == "needs_approval"
    return folder


def test_resume_approves_all_from_the_command_line(tmp_path: Path) -> None:
    """The recorded turn is replayed (the demo model is never asked): `send` runs, approved,
    and ends the run."""
    folder = held_run(tmp_path)
    args = ["resume", "held-1", "--approve", "all", "--trajectories", str(folder)]
    done = agentrt(*args, "--model", "demo", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [event_adapter.validate_json(line) for line in done.stdout.splitlines()]
    end = events[-1]
    assert isinstance(end, RunFinishedEvent)
    assert (end.status, end.answer) == ("ok", "Your parcel left today.")
    (resumed,) = [e for e in events if isinstance(e, RunResumedEvent)]
    assert (resumed.replayed_turns, resumed.previous) == (1, "held-1~1.jsonl")

    replayed = agentrt("replay", str(folder), cwd=tmp_path)  # both attempts' files
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.count("no difference") == 2, replayed.stdout


def test_resume_usage_errors(tmp_path: Path) -> None:
    folder = held_run(tmp_path)
    base = ["--trajectories", str(folder), "--model", "demo"]
    for args, message in [
        (["resume", "nope"], "no run 'nope'"),
        (["resume", "held-1"], "awaits approval of call_1_1 (send"),
        (["resume", "held-1", "--arguments", "call_1_1=oops"], "not JSON"),
        (["resume", "held-1", "--approve", "call_7"], "no call 'call_7' awaiting approval"),
    ]:
        done = agentrt(*args, *base, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in " ".join(done.stderr.split()), (args, done.stderr)
