"""A run to kill: turn 1 calls `note` (a side effect: a line appended to a file), turn 2 calls
`slow`, which waits for something that never comes. The test SIGKILLs this process once the
trajectory shows `slow` started, then resumes the run in its own process.

    python -m tests.resume.crash_run TRAJECTORY_DIR NOTES_FILE
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from agentrt import Agent, AgentSettings, ScriptedModel, Tool
from tests.helpers import call

RUN_ID = "crash-1"
QUESTION = "Note it, then wait."
TURNS = [call("note", text="hello"), call("slow")]
"""The turns the killed process plays; the resumed run's model holds only those after."""


def tools(notes: Path, slow: Callable[[], Awaitable[str]]) -> list[Tool]:
    """`note` appends to `notes`; `slow` is the given function."""

    def note(text: str) -> str:
        """Append a line to the notes file.

        Args:
            text: The line.
        """
        with notes.open("a", encoding="utf-8") as f:
            f.write(text + "\n")
        return "noted"

    return [Tool(note), Tool(slow, name="slow", description="Wait for the slow thing.")]


async def never() -> str:
    await asyncio.Event().wait()  # nothing ever sets it: the process is killed here
    return "never"


async def main(folder: Path, notes: Path) -> None:
    model = ScriptedModel([*TURNS, "never reached"])
    agent = Agent(model, tools=tools(notes, never), settings=AgentSettings(trajectory_dir=folder))
    await agent.run(QUESTION, run_id=RUN_ID)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
