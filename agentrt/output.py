"""Internal. Typed output: what a run's final answer must be, and the step that makes it so.

An agent with an `output_type` other than `str` (a pydantic model, a dataclass, a TypedDict, a
primitive, a union) ends every successful run with a value of that type. The planner answers
as it always does; if its answer is already a JSON value of the type, that is the output.
Otherwise one more model call asks for the answer as JSON, constrained to the type's JSON
schema (`ModelRequest.json_schema`: a grammar on the embedded model and llama.cpp, guided
decoding on vLLM, `response_format` on OpenAI), so it is valid by construction wherever the
backend constrains. What still fails validation (a validator the schema cannot express, a
backend that does not constrain) goes back to the model with the exact errors, `retries`
times, before the run ends `error` naming the last of them. While the answer streams,
`output_delta` events carry it as far as it has been parsed.

With a model that calls tools natively, a `react` run offers a `final_result` tool instead of
`finish`: its one argument, `answer`, has the output's schema, so the model gives the typed
answer as a tool call, checked like any other (invalid arguments go back to it with their
errors) and no extra call is needed.
"""

from __future__ import annotations

import json
import re
from contextlib import aclosing
from typing import Any, Generic, TypeVar

import pydantic_core
from pydantic import ConfigDict, JsonValue, TypeAdapter, ValidationError, create_model

from agentrt._validation import describe_errors
from agentrt.events import OutputDeltaEvent, Usage
from agentrt.exceptions import OutputInvalid, UserError
from agentrt.models.base import Message, ModelRequest, TextChunk, UsageChunk
from agentrt.parsing.answers import JSONProblem, find_json
from agentrt.run import RunContext
from agentrt.tool import Tool

__all__ = ["FINAL_RESULT", "OutputSpec", "structured_output"]

FINAL_RESULT = "final_result"
"""The tool a native tool-calling model ends a typed run with (it takes `finish`'s place)."""

OutputT = TypeVar("OutputT")

_ASK = (
    "Your answer was:\n{answer}\n\nWrite that answer as one JSON value matching this JSON "
    "schema, and nothing else:\n{schema}"
)
_NUMBER_TAIL = re.compile(r"(\d)(?:\.|[eE][+-]?)$")
_FIX = "That answer is not valid: {errors}. Give the corrected JSON value, and nothing else."


class OutputSpec(Generic[OutputT]):
    """An `output_type`, checked once: its validator and its JSON schema.

    :raises UserError: the type cannot be validated or described as a JSON schema
    """

    def __init__(self, output_type: type[OutputT]) -> None:
        self.type = output_type
        self.name = getattr(output_type, "__name__", repr(output_type))
        self.is_text = output_type is str
        try:
            self.adapter: TypeAdapter[OutputT] = TypeAdapter(output_type)
            self.schema: dict[str, Any] = self.adapter.json_schema()
        except Exception as exc:  # pydantic raises several kinds for types it cannot use
            msg = f"output_type {self.name} cannot be validated as JSON: {exc}"
            raise UserError(msg) from exc

    def parse(self, text: str) -> OutputT:
        """The output in `text` (the JSON value in it, or the text itself for a `str` type).

        :raises JSONProblem: there is no JSON value in `text`
        :raises ValidationError: the value is not of the type
        """
        if self.is_text:
            return self.adapter.validate_python(text)
        return self.adapter.validate_python(find_json(text))

    def final_tool(self) -> Tool:
        """The `final_result` tool: its `answer` argument is the output, returned as JSON."""
        arguments = create_model(
            f"{FINAL_RESULT}_arguments",
            __config__=ConfigDict(extra="forbid"),
            answer=(self.type, ...),
        )

        def final_result(answer: Any) -> str:
            return json.dumps(self.dump(answer), ensure_ascii=False)

        return Tool(
            final_result,
            description=f"Give the final answer (a {self.name}) and end the run.",
            args_model=arguments,
            ends_run=True,
            cache=False,
        )

    def dump(self, value: OutputT) -> JsonValue:
        """The output as JSON data (for `run_finished` and the trajectory)."""
        dumped: JsonValue = self.adapter.dump_python(value, mode="json")
        return dumped

    def partial(self, text: str) -> tuple[JsonValue, bool] | None:
        """The output as far as `text` (a JSON value still being written) goes, and whether
        that much is valid yet (pydantic's partial validation); None before the value starts."""
        # A number cut after its point or exponent (`21.`) would drop its whole field from
        # the partial value for a delta: read it as far as it is a number (`21`).
        text = _NUMBER_TAIL.sub(r"\1", text)
        try:
            value: JsonValue = pydantic_core.from_json(text, allow_partial="trailing-strings")
        except ValueError:
            return None
        try:
            self.adapter.validate_python(value, experimental_allow_partial="trailing-strings")
        except ValidationError:
            return value, False
        return value, True


def _describe(error: JSONProblem | ValidationError) -> str:
    if isinstance(error, ValidationError):
        return describe_errors(error, root="value", quote=False)
    return str(error)


async def structured_output(
    ctx: RunContext,
    spec: OutputSpec[OutputT],
    conversation: list[Message],
    *,
    step: int,
    retries: int,
) -> OutputT:
    """Ask the model for its final answer as a JSON value of `spec`'s type, constrained to
    the schema, and validate it; an invalid answer is sent back with its errors.

    :param conversation: the run so far, ending with the answer to be given as JSON
    :raises OutputInvalid: no valid answer after `retries` retries
    """
    schema = json.dumps(spec.schema, ensure_ascii=False)
    # The answer is quoted next to the request: small models copy from there, where they
    # lose it a message back.
    ask = _ASK.format(answer=conversation[-1].content, schema=schema)
    messages = [*conversation, Message(role="user", content=ask)]
    for _ in range(retries + 1):
        text = await _stream_output(ctx, spec, messages, step)
        try:
            return spec.parse(text)
        except (JSONProblem, ValidationError) as exc:
            error = _describe(exc)
        messages += [
            Message(role="assistant", content=text),
            Message(role="user", content=_FIX.format(errors=error)),
        ]
    msg = f"the final answer is not a valid {spec.name} after {retries + 1} tries: {error}"
    raise OutputInvalid(msg)


async def _stream_output(
    ctx: RunContext, spec: OutputSpec[Any], messages: list[Message], step: int
) -> str:
    """One constrained call, its partial output sent as `output_delta` events."""
    request = ModelRequest(messages=messages, json_schema=spec.schema, purpose="output")
    started = ctx.elapsed()
    text, usage, shown = "", Usage(), None
    async with aclosing(ctx.stream(request, step=step)) as call:
        async for chunk in call:
            if isinstance(chunk, UsageChunk):
                usage = chunk.usage
            elif isinstance(chunk, TextChunk):
                text += chunk.text
                partial = spec.partial(text)
                if partial is not None and partial != shown:
                    shown = partial
                    ctx.emit(OutputDeltaEvent, step=step, output=partial[0], valid=partial[1])
    ctx.record_model_response(call, tool_calls=[], usage=usage, duration=ctx.elapsed() - started)
    return text
