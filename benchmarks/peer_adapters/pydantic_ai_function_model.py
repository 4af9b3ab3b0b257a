"""PydanticAI: an Agent with the tool registered as a plain function, driven by
`FunctionModel`, the library's own seam for scripting a model (an async function, so that it
is awaited rather than sent to a worker thread)."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from peer_adapters import (
    ANSWER,
    COUNTS,
    TOOLS_PER_TURN,
    TURNS,
    Run,
    check_answer,
    noop,
    sleep_ms,
    turn_calls,
)


def build(tool_ms: int, per_turn: int = TOOLS_PER_TURN) -> Run:
    async def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        COUNTS.model_calls += 1
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        usage = RequestUsage(input_tokens=10, output_tokens=10)
        if turn < TURNS:
            calls = [
                ToolCallPart(name, args, tool_call_id=f"call_{turn}_{k}")
                for k, (name, args) in enumerate(turn_calls(turn, tool_ms, per_turn))
            ]
            return ModelResponse(parts=calls, usage=usage)
        return ModelResponse(parts=[TextPart(ANSWER)], usage=usage)

    agent = Agent(FunctionModel(scripted), tools=[sleep_ms if tool_ms else noop])

    async def run() -> None:
        result = await agent.run("bench")
        check_answer(result.output, "PydanticAI")

    return run
