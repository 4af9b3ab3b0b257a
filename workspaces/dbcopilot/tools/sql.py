"""The database copilot's tools: ground a question in the schema, run guarded SQL.

The database, the guard's policy, the grounding budget and the database's synonyms file
(beside it, see `agentrt.sql.grounding.load_synonyms`) are in the workspace's `copilot.yaml`
(`AGENTRT_COPILOT_DATABASE` overrides the database). An application may instead put a ready
`Copilot` in the session's artifacts under "copilot". Query results are kept as pandas
DataFrames in the run's artifacts, by name, so the chart tools (`charts.py`) can draw them; the
model gets a bounded summary of each result, never all its rows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrt import ToolContext, ToolError, tool
from agentrt._validation import load_yaml, load_yaml_model
from agentrt.sql.examples import ExampleSelector, fitting, load_examples
from agentrt.sql.grounding import SchemaIndex, load_synonyms
from agentrt.sql.guard import GuardPolicy, SqlGuard
from agentrt.vectors.embedder import load_embedder

WORKSPACE = Path(__file__).resolve().parent.parent


@dataclass
class Copilot:
    """What the tools work with: the guard over the database, its schema index, the examples."""

    guard: SqlGuard
    index: SchemaIndex
    examples: ExampleSelector
    budget: tuple[int, int, int] = (3, 10, 10)
    """At most this many tables, columns and values grounded per question."""
    k: int = 3
    """Examples shown per question."""

    @classmethod
    def from_config(cls, path: Path, cache: Path | None = None) -> Copilot:
        config = load_yaml(path) or {}
        database = os.environ.get("AGENTRT_COPILOT_DATABASE") or config.get("database")
        if not database:
            msg = f"no database: set `database` in {path} or AGENTRT_COPILOT_DATABASE"
            raise ToolError(msg)
        embedder = load_embedder(config.get("embedding_model"))
        grounding = config.get("grounding", {})
        policy = load_yaml_model(path, GuardPolicy, data=config.get("policy", {}), where="policy")
        index = SchemaIndex.build(
            database,
            embedder,
            cache,
            descriptions=config.get("notes"),
            synonyms=load_synonyms(path.parent / config["synonyms"])
            if config.get("synonyms")
            else None,
        )
        # The index's joins hold the inferred ones: a missing column's error names its join.
        guard = SqlGuard(database, policy, joins=index.joins)
        examples = fitting(load_examples(WORKSPACE / "examples"), guard)
        return cls(
            guard=guard,
            index=index,
            examples=ExampleSelector.build(examples, embedder, cache),
            budget=(
                grounding.get("tables", 3),
                grounding.get("columns", 10),
                grounding.get("values", 10),
            ),
            k=config.get("examples", 3),
        )


def _copilot(ctx: ToolContext) -> Copilot:
    found = ctx.artifacts.get("copilot")
    if not isinstance(found, Copilot):
        found = Copilot.from_config(WORKSPACE / "copilot.yaml", cache=WORKSPACE / ".cache")
        ctx.artifacts["copilot"] = found
    return found


# The first call on a database builds its schema index (cached in .cache/ after): 14 s on a
# quiet 2-core machine, past the default 30 s under load, which failed the question.
@tool(timeout=180)
def ground_schema(ctx: ToolContext, question: str) -> dict[str, Any]:
    """Find the tables, columns and values of the database a question needs, and worked
    examples of similar questions. Call it first: write SQL only against what it returns.

    Args:
        question: The user's question, in their words.
    """
    copilot = _copilot(ctx)
    tables, columns, values = copilot.budget
    grounding = copilot.index.ground(question, tables=tables, columns=columns, values=values)
    return {
        "schema": grounding.render(),
        "examples": [e.render() for e in copilot.examples.select(question, copilot.k)],
    }


@tool(cache=False)
def run_sql(ctx: ToolContext, sql: str, name: str = "result") -> dict[str, Any]:
    """Run one read-only SQL (SQLite) query and see a summary of its rows. The whole result
    is kept as a table under `name` for the chart tools.

    Args:
        sql: One SELECT statement in SQLite's dialect.
        name: The name to keep the result under, for plot_line, plot_bar or plot_histogram.
    """
    result = _copilot(ctx).guard.execute(sql)
    try:
        import pandas as pd
    except ImportError:
        summary = result.summary()
    else:
        ctx.artifacts[name] = pd.DataFrame(result.rows, columns=result.columns)
        summary = result.summary() | {"table": name}
    if all(value is None for row in result.rows for value in row):
        summary["empty"] = EMPTY
    return summary


# The 1.5B filtered on look-alike values the grounding listed ('AFRICAN SHAWSHANK' for
# "Comedy films"), got NULL and answered with it.
EMPTY = (
    "No row, or only NULL: if the question expects an answer, a condition may be one it does "
    "not ask for, or a value spelled otherwise in the data. Check each condition against the "
    "question."
)
