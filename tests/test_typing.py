"""What mypy sees of the code-first API: a run's output has the agent's output type, a tool's
`ctx.deps` the tool's deps type, and `run(deps=...)` is checked against the agent's."""

from __future__ import annotations

from pathlib import Path

from mypy import api

PROGRAM = '''
from pydantic import BaseModel
from agentrt import Agent, ScriptedModel, ToolContext

class City(BaseModel):
    name: str

class Db:
    def count(self) -> int:
        return 1

def rows(ctx: ToolContext[Db]) -> int:
    """Count the rows."""
    reveal_type(ctx.deps)
    return ctx.deps.count()

async def main() -> None:
    typed = Agent(ScriptedModel([]), tools=[rows], output_type=City, deps_type=Db)
    reveal_type((await typed.run("q", deps=Db())).output)
    plain = Agent(ScriptedModel([]))
    reveal_type((await plain.run("q")).output)
    async for event in plain.run("q"):
        reveal_type(event.run_id)
    typed.run("q", deps=3)
'''


def test_mypy_sees_the_output_and_deps_types(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    root = Path(__file__).parents[1]
    out, _, status = api.run(
        ["--strict", "--cache-dir", str(root / ".mypy_cache"), "--no-error-summary", str(program)]
    )
    lines = [line.split(": ", 1)[1] for line in out.splitlines()]
    assert lines == [
        'note: Revealed type is "program.Db"',
        'note: Revealed type is "program.City"',
        'note: Revealed type is "str"',
        'note: Revealed type is "str"',
        'error: Argument "deps" to "run" of "Agent" has incompatible type "int"; expected "Db"'
        "  [arg-type]",
    ]
    assert status == 1
