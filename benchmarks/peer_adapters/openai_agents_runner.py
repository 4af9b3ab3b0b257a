"""OpenAI Agents SDK: an Agent with a `function_tool`, run by `Runner.run`, on a custom `Model`
(the SDK's seam for other providers; its own tests script a FakeModel the same way), with
tracing turned off."""

from __future__ import annotations

import json
from typing import Any

from agents import (
    Agent,
    Model,
    ModelResponse,
    Runner,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputItem,
    ResponseOutputMessage,
    ResponseOutputText,
)

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


class ScriptedModel(Model):
    """Answers with the workload's tool calls for the turn the input items are at."""

    def __init__(self, tool_ms: int, per_turn: int) -> None:
        self.tool_ms = tool_ms
        self.per_turn = per_turn

    def _output(self, items: str | list[Any]) -> list[ResponseOutputItem]:
        calls_so_far = sum(
            1 for item in items if isinstance(item, dict) and item.get("type") == "function_call"
        )
        turn = calls_so_far // self.per_turn
        if turn < TURNS:
            return [
                ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc_{turn}_{k}",
                    call_id=f"call_{turn}_{k}",
                    name=name,
                    arguments=json.dumps(args),
                )
                for k, (name, args) in enumerate(turn_calls(turn, self.tool_ms, self.per_turn))
            ]
        text = ResponseOutputText(type="output_text", text=ANSWER, annotations=[])
        return [
            ResponseOutputMessage(
                type="message", id="msg", role="assistant", status="completed", content=[text]
            )
        ]

    async def get_response(
        self, system_instructions: str | None, input: str | list[Any], *args: Any, **kwargs: Any
    ) -> ModelResponse:
        COUNTS.model_calls += 1
        usage = Usage(requests=1, input_tokens=10, output_tokens=10, total_tokens=20)
        return ModelResponse(output=self._output(input), usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        msg = "the benchmark runs the SDK with Runner.run, which does not stream"
        raise NotImplementedError(msg)


def build(tool_ms: int, per_turn: int = TOOLS_PER_TURN) -> Run:
    set_tracing_disabled(True)
    agent = Agent(
        name="bench",
        model=ScriptedModel(tool_ms, per_turn),
        tools=[function_tool(sleep_ms if tool_ms else noop)],
    )

    async def run() -> None:
        # The SDK's default of 10 turns is one short of the workload's 11 model calls.
        result = await Runner.run(agent, "bench", max_turns=TURNS + 1)
        check_answer(result.final_output, "OpenAI Agents SDK")

    return run
