"""A tool with an injected database connection: each run is given it (`deps=`), the tool reads
it (`ctx.deps`), and the model never sees it.

    python examples/database_deps.py [MODEL]     # MODEL: local (default), local:small, openai

The deps carry who is asking too: the tool shows that customer's orders whatever the model
asks for, since the model cannot name another customer.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from dataclasses import dataclass
from typing import Literal

from agentrt import Agent, Model, RunResult, ToolContext


@dataclass
class Db:
    """What a run gives its tools: a connection, and the signed-in customer."""

    conn: sqlite3.Connection
    customer_id: int


def orders(
    ctx: ToolContext[Db], status: Literal["open", "shipped"] | None = None
) -> list[dict[str, str | float]]:
    """The signed-in customer's orders, newest first.

    Args:
        status: Only the orders with this status; all of them when left out.
    """
    sql = "SELECT id, item, total, status FROM orders WHERE customer_id = ?"
    params: list[int | str] = [ctx.deps.customer_id]
    if status is not None:
        sql += " AND status = ?"
        params.append(status)
    rows = ctx.deps.conn.execute(sql + " ORDER BY id DESC", params).fetchall()
    return [dict(row) for row in rows]


def sample_database() -> sqlite3.Connection:
    """An in-memory shop with two customers' orders."""
    # agentrt runs a sync tool in a worker thread, so the connection must be usable from
    # threads other than the one that opened it. Here tools only read; a tool that writes
    # would take a lock around its writes.
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.executescript(
        """
        CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, item TEXT,
                             total REAL, status TEXT);
        INSERT INTO orders VALUES (1, 1, 'desk', 240.0, 'shipped'),
                                  (2, 2, 'chair', 85.0, 'open'),
                                  (3, 1, 'lamp', 32.5, 'open');
        """
    )
    return conn


def build_agent(model: Model) -> Agent[Db, str]:
    # `deps_type` types `run(deps=...)` and is checked against each tool's `ToolContext[Db]`.
    return Agent(
        model,
        tools=[orders],
        deps_type=Db,
        instructions="You help a shop's customers with their orders. Be brief.",
    )


async def main(model: Model) -> RunResult[str]:
    agent = build_agent(model)
    db = Db(sample_database(), customer_id=1)
    result = await agent.run("Which of my orders are still open?", deps=db)
    print(result.output)
    return result


if __name__ == "__main__":
    from agentrt.models.spec import load_model

    asyncio.run(main(load_model(sys.argv[1] if len(sys.argv) > 1 else "local")))
