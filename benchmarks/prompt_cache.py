"""Two chat sessions taking turns on one embedded model, with and without its prompt cache.

    .venv/bin/python benchmarks/prompt_cache.py                 # the 0.5B, 4 turns a session
    .venv/bin/python benchmarks/prompt_cache.py --model qwen2.5-coder-1.5b-instruct-q4_k_m
    .venv/bin/python benchmarks/prompt_cache.py --turns 3    # a smoke check

A chat backend serves several sessions with one `LocalModel`. llama.cpp keeps only the prompt
it read last, so a turn of session A after one of session B reads A's whole prompt again: its
instructions, its tools and its conversation so far. `LocalModel(prompt_cache_mb=…)` keeps the
KV states of recent prompts (`agentrt.models.prefixes`); this measures what that spares.

Each setting gets a fresh model, then the same script: sessions A and B alternate, each turn an
`Agent.run(question, session_id=…)` of a code-first agent with two tools, temperature 0. The
table gives the seconds of each turn (the first turn of each session has nothing to reuse) and
whether both settings answered alike, and any answers that differ. A kept state holds the
KV of the answers the model wrote, computed a token at a time; read again, the same text is
computed in a batch, and the two may differ in the last bits, enough to change a later greedy
choice now and then. llama.cpp's own reuse of its context does the same within a session.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from rich.console import Console
from rich.table import Table

from agentrt import Agent, LocalModel
from agentrt.models.local import SMALL_PACK
from agentrt.models.weights import weight_packs

STOCK = {"lyon": 12, "oslo": 0, "lima": 7}
TURNS = [
    ("A", "How many bikes are in stock in Lyon?"),
    ("B", "When does the shop in Oslo open?"),
    ("A", "And in Lima?"),
    ("B", "And the one in Lima?"),
    ("A", "Which of the two has more?"),
    ("B", "Is it open on Sundays?"),
    ("A", "Thank you. Is Oslo out of stock?"),
    ("B", "Thanks. Which shop opens first?"),
]
INSTRUCTIONS = (
    "You answer customers of a bicycle shop with shops in Lyon, Oslo and Lima. Look facts up "
    "with the tools; never guess them. Answer in one short sentence. "
    + " ".join(
        f"Rule {i}: be polite, name the shop's city, and give the figure the tool returned."
        for i in range(1, 13)
    )
)


def stock(city: str) -> int:
    """Bikes in stock at one of the shops.

    Args:
        city: The shop's city: Lyon, Oslo or Lima.
    """
    return STOCK.get(city.lower(), 0)


def opening_hours(city: str) -> str:
    """When one of the shops opens, by day of the week.

    Args:
        city: The shop's city: Lyon, Oslo or Lima.
    """
    return {"oslo": "10:00-18:00, closed Sundays"}.get(city.lower(), "9:00-19:00 every day")


async def conversation(model_name: str, cache_mb: int, turns: int) -> list[tuple[float, str]]:
    """Each turn's seconds and answer, the model fresh and loaded before the first."""
    model = LocalModel(model_name, prompt_cache_mb=cache_mb)
    await model.load()
    agent = Agent(model, tools=[stock, opening_hours], instructions=INSTRUCTIONS)
    done = []
    for session, question in TURNS[:turns]:
        started = time.perf_counter()
        result = await agent.run(question, session_id=f"session-{session}-{cache_mb}")
        done.append((time.perf_counter() - started, result.answer or f"[{result.status}]"))
    return done


async def main(model_name: str, cache_mb: int, turns: int) -> None:
    without = await conversation(model_name, 0, turns)
    with_cache = await conversation(model_name, cache_mb, turns)
    table = Table(title=f"Two sessions taking turns on {model_name}")
    for column in ("turn", "session", "s, no cache", f"s, {cache_mb} MB cache", "same answer"):
        table.add_column(column, justify="left" if column in ("turn", "session") else "right")
    for i, ((session, _), (s0, a0), (s1, a1)) in enumerate(
        zip(TURNS[:turns], without, with_cache, strict=True), 1
    ):
        table.add_row(str(i), session, f"{s0:.2f}", f"{s1:.2f}", "yes" if a0 == a1 else "no")
    later = slice(2, None)  # each session's first turn has nothing to reuse
    total0 = sum(s for s, _ in without[later])
    total1 = sum(s for s, _ in with_cache[later])
    table.add_row(
        f"3–{turns}", "", f"{total0:.1f}", f"{total1:.1f}", f"{total0 / total1:.1f}× faster with"
    )
    console = Console()
    console.print(table)
    for i, ((_, a0), (_, a1)) in enumerate(zip(without, with_cache, strict=True), 1):
        if a0 != a1:
            console.print(f"turn {i}, no cache: {a0!r}\n        with it: {a1!r}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=SMALL_PACK, choices=sorted(weight_packs()))
    parser.add_argument("--cache-mb", type=int, default=256)
    parser.add_argument("--turns", type=int, default=len(TURNS), choices=range(3, len(TURNS) + 1))
    args = parser.parse_args()
    asyncio.run(main(args.model, args.cache_mb, args.turns))
