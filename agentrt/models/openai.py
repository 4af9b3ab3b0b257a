"""A streaming client for OpenAI-compatible chat completions: vLLM, llama.cpp, Ollama, LM Studio,
OpenAI.

Import it where it is used: it loads httpx, httpx-sse, tenacity and pydantic-settings, which
`import agentrt` does not need.

What happens when a call fails:

    failure                                      before the first chunk     after it
    ───────────────────────────────────────────  ─────────────────────────  ─────────────────
    429, 5xx (waiting `Retry-After` when sent,   retried                    —
      at most `retry_max_wait`)
    connect / read / protocol error, timeout     retried                    StreamInterrupted
    stream ends before its first event           retried                    —
    `data:` that is not a JSON completion chunk  retried                    StreamInterrupted
    `error` object in the stream                 4xx code: RequestRejected, StreamInterrupted
                                                   otherwise retried
    other 4xx, a 2xx that is not an event        RequestRejected at once    —
      stream

Retries wait with exponential backoff and jitter (`retry_initial_wait`, doubling, capped by
`retry_max_wait`); after `max_retries` of them the call raises `RetriesExhausted` naming the
last failure. Nothing is retried once a chunk has been yielded: the caller has seen part of the
answer, so it decides (the `react` planner asks the turn again once). Lines that are malformed
as SSE (no colon, comments, unknown fields) are ignored, as the SSE specification says.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import math
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import UTC
from types import TracebackType
from typing import Any, Literal, Self

import httpx
import httpx_sse
from pydantic import AliasChoices, BaseModel, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    RetryError,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from agentrt.events import Usage
from agentrt.exceptions import ModelError, RequestRejected, RetriesExhausted, StreamInterrupted
from agentrt.logs import get_logger
from agentrt.models.base import (
    Message,
    ModelChunk,
    ModelRequest,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
    for_llama_grammar,
    text_mode_messages,
)

__all__ = ["OpenAIModel", "OpenAISettings"]

_log = get_logger("agentrt.models.openai")

_EXCERPT = 300
"""Characters of a response body quoted in an error message."""


_ServerChunk = TextChunk | ReasoningChunk | ToolCallChunk | UsageChunk
"""What a server's stream holds (a `ToolConfidenceChunk` is the embedded model's)."""


class OpenAISettings(BaseSettings):
    """Where the server is and how to talk to it; each field can be set as
    `AGENTRT_OPENAI_<FIELD>` in the environment."""

    model_config = SettingsConfigDict(env_prefix="AGENTRT_OPENAI_", populate_by_name=True)

    base_url: str = "http://127.0.0.1:8000/v1"
    """The API root, without `/chat/completions`."""
    model: str = "default"
    """The model id sent with each request (vLLM wants its served name; llama.cpp ignores it)."""
    api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("AGENTRT_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    """Sent as a bearer token; also read from `OPENAI_API_KEY`."""
    connect_timeout: float = Field(10.0, gt=0)
    """Seconds to open a connection."""
    read_timeout: float = Field(120.0, gt=0)
    """Longest silence between two reads, the wait for the first byte included: a CPU server
    may think for a long while over a long prompt before it answers."""
    write_timeout: float = Field(30.0, gt=0)
    """Seconds to send the request."""
    pool_timeout: float = Field(10.0, gt=0)
    """Seconds to wait for a free connection of the pool."""
    max_retries: int = Field(4, ge=0)
    """Retries after the first attempt, for 429, 5xx and network errors before the answer."""
    retry_initial_wait: float = Field(0.5, ge=0)
    """Seconds before the first retry; each further one waits about twice as long."""
    retry_max_wait: float = Field(20.0, ge=0)
    """Longest single wait between attempts, a server's `Retry-After` included."""
    structured_output: Literal["json_schema", "json_object", "vllm", "none"] = "json_schema"
    """How `request.json_schema` is sent: OpenAI's `response_format` json_schema; llama-cpp-
    python's `json_object` with a `schema` (it answers 500 to the former); vLLM's top-level
    `guided_json`; or not at all."""
    tool_mode: Literal["native", "text"] = "native"
    """`native`: tools go in the request and calls come back as `tool_calls`. `text`: the prompt
    describes the tools, the model writes calls in its text, results return as a user message."""
    temperature: float | None = None
    """None leaves it to the server."""
    max_tokens: int | None = Field(None, gt=0)
    """The answer's length limit; a request's own `max_tokens` wins. None leaves it to the
    server."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Merged into every request body last, e.g. `{"top_k": 20}` or `{"seed": 0}`."""


class OpenAIModel:
    """A model behind an OpenAI-compatible `/chat/completions` endpoint, streamed over SSE.

    One instance keeps one connection pool: create it once, share it between runs, and close it
    with `aclose()` (or use it as `async with`).

    :param settings: the server and how to call it; None reads them from the environment
    :param client: an HTTP client to use instead of the model's own; it is not closed by
        `aclose()`. Timeouts and the API key are still sent with every request.
    :param starts_in_reasoning: the server's chat template ends the prompt inside an open
        ``<think>`` (DeepSeek-R1's, Qwen3's with thinking on) and the server does not split the
        reasoning off itself, so only ``</think>`` arrives (see `Model`)

    Reasoning the server sends apart from the text (`delta.reasoning_content`, or
    `delta.reasoning`) streams as `ReasoningChunk`s.
    """

    def __init__(
        self,
        settings: OpenAISettings | None = None,
        *,
        client: httpx.AsyncClient | None = None,
        starts_in_reasoning: bool = False,
    ) -> None:
        self.settings = settings or OpenAISettings()
        self.starts_in_reasoning = starts_in_reasoning
        s = self.settings
        self._url = s.base_url.rstrip("/") + "/chat/completions"
        self._timeout = httpx.Timeout(
            connect=s.connect_timeout,
            read=s.read_timeout,
            write=s.write_timeout,
            pool=s.pool_timeout,
        )
        self._headers: dict[str, str] = {}
        if s.api_key is not None:
            self._headers["Authorization"] = f"Bearer {s.api_key.get_secret_value()}"
        # Full jitter: a random wait up to the exponential bound, so that clients refused
        # together do not come back together.
        self._backoff = wait_random_exponential(
            multiplier=s.retry_initial_wait, max=s.retry_max_wait
        )
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient(timeout=self._timeout)

    @property
    def name(self) -> str:
        return self.settings.model

    @property
    def native_tools(self) -> bool:
        return self.settings.tool_mode == "native"

    @property
    def final_result_tool(self) -> bool:
        """A typed output as a native tool call: with native tools on a server that takes
        OpenAI's strict `json_schema` (OpenAI's own); llama.cpp and vLLM get the schema-bound
        final step instead (see `Model`)."""
        return self.native_tools and self.settings.structured_output == "json_schema"

    async def aclose(self) -> None:
        """Close the connection pool, unless the client was passed in."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        messages = (
            request.messages
            if self.native_tools
            else text_mode_messages(request.messages, request.results_nudge)
        )
        body = self._body(request, messages)
        # Servers that send no usage get an estimate: about four characters to a token.
        prompt_estimate = sum(_chars(m) for m in messages) // 4
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type(_Retryable),
            before_sleep=self._log_retry,
        )
        first: ModelChunk
        chunks: AsyncGenerator[ModelChunk, None]
        try:
            first, chunks = await retrying(self._start, body, prompt_estimate)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            msg = (
                f"{self._url}: gave up after {exc.last_attempt.attempt_number} attempts; "
                f"the last failed with {last}"
            )
            raise RetriesExhausted(msg) from last
        async with contextlib.aclosing(chunks):
            yield first
            async for chunk in chunks:
                yield chunk

    def _body(self, request: ModelRequest, messages: list[Message]) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any] = {
            "model": s.model,
            "messages": [_message(m, native=self.native_tools) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.native_tools and request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
            must = request.must_call
            if len(must) == 1:
                body["tool_choice"] = {"type": "function", "function": {"name": must[0]}}
            elif must:
                body["tool_choice"] = "required"
        schema = request.json_schema
        if schema is not None:
            if s.structured_output == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": schema, "strict": True},
                }
            elif s.structured_output == "json_object":
                # llama-cpp-python's server builds a grammar from it.
                body["response_format"] = {
                    "type": "json_object",
                    "schema": for_llama_grammar(schema),
                }
            elif s.structured_output == "vllm":
                body["guided_json"] = schema
        if s.temperature is not None:
            body["temperature"] = s.temperature
        max_tokens = request.max_tokens if request.max_tokens is not None else s.max_tokens
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        body.update(s.extra_body)
        return body

    async def _start(
        self, body: dict[str, Any], prompt_estimate: int
    ) -> tuple[ModelChunk, AsyncGenerator[ModelChunk, None]]:
        """One attempt: the first chunk of the answer, and the generator that has the rest.

        An attempt that fails before its first chunk leaves its generator finished, and with it
        the connection closed.
        """
        chunks = self._attempt(body, prompt_estimate)
        first = await anext(chunks)
        return first, chunks

    async def _attempt(
        self, body: dict[str, Any], prompt_estimate: int
    ) -> AsyncGenerator[ModelChunk, None]:
        """Stream one attempt. Before its first chunk a failure is `_Retryable` (or final); from
        the first chunk on, it is `StreamInterrupted`."""
        started = False
        tokens = 0
        usage: Usage | None = None
        events = 0
        try:
            async with httpx_sse.aconnect_sse(
                self._client,
                "POST",
                self._url,
                json=body,
                headers=self._headers,
                timeout=self._timeout,
            ) as source:
                await self._check(source.response)
                async for sse in source.aiter_sse():
                    if sse.data == "":
                        # An event without data (only `event:`, `id:` or `retry:`): nothing to read.
                        continue
                    events += 1
                    if sse.data.strip() == "[DONE]":
                        break
                    for chunk in self._chunks(sse, started):
                        if isinstance(chunk, UsageChunk):
                            usage = chunk.usage
                            continue
                        # Servers send about one token per delta: count them for servers
                        # that report no usage.
                        if isinstance(chunk, TextChunk | ReasoningChunk) or chunk.arguments:
                            tokens += 1
                        started = True
                        yield chunk
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            reason = _describe(exc)
            if started:
                msg = f"{self._url}: the stream broke off after the answer had begun: {reason}"
                raise StreamInterrupted(msg) from exc
            raise _Retryable(reason) from exc
        except httpx.HTTPError as exc:
            msg = f"{self._url}: {_describe(exc)}"
            raise ModelError(msg) from exc
        if events == 0:
            msg = "the stream ended before its first event"
            raise _Retryable(msg)
        if usage is None:
            usage = Usage(prompt_tokens=prompt_estimate, completion_tokens=tokens)
        yield UsageChunk(usage=usage)

    async def _check(self, response: httpx.Response) -> None:
        """Raise unless the response is a successful event stream."""
        status = response.status_code
        if response.is_success:
            kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
            if kind == "text/event-stream":
                return
            await response.aread()
            msg = (
                f"{status} {response.reason_phrase}: expected an event stream, got "
                f"{kind or 'no content type'}: {_excerpt(response.text)}"
            )
            raise RequestRejected(msg)
        await response.aread()
        reason = f"{status} {response.reason_phrase}: {_error_detail(response)}"
        if status == 429 or status >= 500:
            # A 503 may say when to come back as well as a 429 does.
            raise _Retryable(reason, _retry_after(response.headers.get("retry-after")))
        raise RequestRejected(reason)

    def _chunks(self, sse: httpx_sse.ServerSentEvent, started: bool) -> list[_ServerChunk]:
        """The chunks in one SSE event; raise if the event is broken or reports an error."""
        try:
            payload = _StreamChunk.model_validate_json(sse.data)
        except ValidationError:
            reason = f"an event that is not a completion chunk: {_excerpt(sse.data)}"
            if started:
                msg = f"{self._url}: the stream broke off with {reason}"
                raise StreamInterrupted(msg) from None
            raise _Retryable(reason) from None
        if payload.error is not None or sse.event == "error":
            error = payload.error
            detail = _message_of(error if error is not None else json.loads(sse.data))
            if started:
                msg = f"{self._url}: the server reported an error mid-stream: {detail}"
                raise StreamInterrupted(msg)
            code = error.get("code") if isinstance(error, dict) else None
            if isinstance(code, int) and 400 <= code < 500 and code != 429:
                msg = f"{code} {httpx.codes.get_reason_phrase(code)}: {detail}"
                raise RequestRejected(msg)
            raise _Retryable(f"an error in the stream: {detail}")
        out: list[_ServerChunk] = []
        delta = payload.choices[0].delta if payload.choices else None
        if delta is not None:
            # vLLM, SGLang and DeepSeek name it `reasoning_content`, newer vLLM and llama.cpp
            # (some versions) `reasoning`; a server sends one or the other.
            reasoning = delta.reasoning_content or delta.reasoning
            if reasoning:
                out.append(ReasoningChunk(text=reasoning))
            if delta.content:
                out.append(TextChunk(text=delta.content))
            for position, call in enumerate(delta.tool_calls or ()):
                function = call.function or _FunctionDelta()
                out.append(
                    ToolCallChunk(
                        index=position if call.index is None else call.index,
                        id=call.id,
                        name=function.name,
                        arguments=function.arguments,
                    )
                )
        if payload.usage is not None:
            usage = Usage(
                prompt_tokens=payload.usage.prompt_tokens or 0,
                completion_tokens=payload.usage.completion_tokens or 0,
            )
            out.append(UsageChunk(usage=usage))
        return out

    def _wait(self, state: RetryCallState) -> float:
        """Seconds before the next attempt: the server's `Retry-After` if it sent one, else
        exponential backoff with jitter; never more than `retry_max_wait`."""
        failure = state.outcome.exception() if state.outcome is not None else None
        if isinstance(failure, _Retryable) and failure.retry_after is not None:
            return min(failure.retry_after, self.settings.retry_max_wait)
        return self._backoff(state)

    def _log_retry(self, state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome is not None else None
        _log.warning(
            "model call failed; retrying",
            url=self._url,
            attempt=state.attempt_number,
            error=str(failure),
            wait=round(state.upcoming_sleep, 3),
        )


# What is read of a `chat.completion.chunk`; anything else in it (`role`, `logprobs`, …) is
# ignored. Servers send null for absent fields as often as they leave them out.


class _FunctionDelta(BaseModel):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(BaseModel):
    index: int | None = None
    id: str | None = None
    function: _FunctionDelta | None = None


class _Delta(BaseModel):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class _Choice(BaseModel):
    delta: _Delta | None = None


class _UsageReport(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _StreamChunk(BaseModel):
    choices: list[_Choice] | None = None
    usage: _UsageReport | None = None
    error: Any = None


# Not drawn in `agentrt.exceptions`, on purpose: tenacity decides whether to try again by the
# type of what an attempt raised (`retry_if_exception_type`), so a retryable failure has to be
# an exception of its own. It never leaves this module: `stream` turns the last one into
# `RetriesExhausted`.
class _Retryable(Exception):
    """A failure before the answer began that another attempt may not meet."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
        """Seconds the server asked us to wait, if it did."""


def _message(m: Message, *, native: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if native and m.tool_calls:
        out["tool_calls"] = [
            # A call without an id (some servers give none) is sent without one: an invented id
            # could not match the `tool_call_id` of its result.
            {"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            | ({"id": c.id} if c.id is not None else {})
            for c in m.tool_calls
        ]
    if m.role == "tool" and m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    return out


def _chars(m: Message) -> int:
    return len(m.content) + sum(len(c.name) + len(c.arguments) for c in m.tool_calls)


# RFC 9110: delay-seconds is `1*DIGIT`. A fraction is tolerated; `nan`, `inf`, `1e999` or a
# sign are not numbers of seconds, and `float()` would take them (a `nan` sleep stalls the loop).
_DELAY_SECONDS = re.compile(r"\d{1,9}(?:\.\d{1,6})?")


def _retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header: a number of seconds or an HTTP date, at least 0.

    None for anything else (the caller then backs off as if no header came): never a `nan`,
    an infinity or a negative wait. The caller caps it at `retry_max_wait`.
    """
    if value is None:
        return None
    value = value.strip()
    if _DELAY_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": UTC with no claim about local time
        when = when.replace(tzinfo=UTC)
    seconds = when.timestamp() - time.time()
    return max(seconds, 0.0) if math.isfinite(seconds) else None


def _error_detail(response: httpx.Response) -> str:
    """The server's own words: `error.message` (OpenAI, vLLM), `error` (Ollama), `detail`
    (FastAPI servers), or the start of the body."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        return _message_of(payload)
    return _excerpt(response.text) or "(empty body)"


def _message_of(payload: Any) -> str:
    if isinstance(payload, dict):
        for key in ("error", "message", "detail"):
            value = payload.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, dict):
                return _message_of(value)
    return _excerpt(json.dumps(payload))


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"


def _describe(exc: Exception) -> str:
    # Some httpx errors carry an empty message: the class name then says what happened.
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
