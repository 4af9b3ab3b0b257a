"""A multi-turn chat: each question is asked with the conversation so far, its tool calls and
their results included, so "And in yen?" knows what "it" was.

    python examples/chat_history.py [MODEL]     # MODEL: local (default), local:small, openai

A run's `result.messages` is the whole conversation; pass it as the next run's
`message_history`. (A server keeping conversations by id would use `session_id=` instead.)
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable

from agentrt import Agent, Message, Model, RunResult

_PER_EURO = {"EUR": 1.0, "USD": 1.08, "JPY": 162.0, "GBP": 0.85}


def convert(amount: float, source: str, target: str) -> float:
    """Convert an amount of money between currencies.

    Args:
        amount: How much, in the source currency.
        source: The currency it is in: EUR, USD, JPY or GBP.
        target: The currency wanted: EUR, USD, JPY or GBP.
    """
    return round(amount / _PER_EURO[source] * _PER_EURO[target], 2)


def build_agent(model: Model) -> Agent[None, str]:
    return Agent(
        model,
        tools=[convert],
        instructions="You convert currencies. Use the convert tool; answer in one sentence.",
    )


async def chat(agent: Agent[None, str], questions: Iterable[str]) -> list[RunResult[str]]:
    """Ask each question in turn, each with the conversation before it."""
    history: list[Message] = []
    results = []
    for question in questions:
        result = await agent.run(question, message_history=history)
        print(f"> {question}\n{result.output}")
        history = result.messages
        results.append(result)
    return results


QUESTIONS = ["How much is 100 EUR in USD?", "And in yen?"]

if __name__ == "__main__":
    from agentrt.models.spec import load_model

    model = load_model(sys.argv[1] if len(sys.argv) > 1 else "local")
    asyncio.run(chat(build_agent(model), QUESTIONS))
