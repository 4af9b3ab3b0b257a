"""The embedded model: a GGUF model run in-process by llama-cpp-python. No server, no key.

    stream(request) ──► lock ──► worker thread: llama.create_chat_completion(stream=True)
                                    │ each chunk, via loop.call_soon_threadsafe
                                    ▼
                        asyncio queue ──► TextChunk … UsageChunk ──► caller

Generation runs in a worker thread, so the event loop keeps serving other runs and tools
while tokens are produced. One `Llama` computes one answer at a time (it is not thread-safe):
concurrent calls wait their turn. A JSON step (`request.json_schema`) is constrained by a
grammar built from the schema, so its answer always parses.

Tools reach the model through its own chat template (Qwen's `<tools>` preamble, which it was
trained on); it writes calls as text — small models write bare or fenced JSON more often than
`<tool_call>` tags, and the parser takes all three — and gets results back as one user message
with a nudge saying what to do next (`text_mode_messages`; by default, to answer), the form a
0.5B model answers well.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio

from agentrt.events import Usage
from agentrt.exceptions import ModelError, UserError
from agentrt.models.base import (
    Message,
    ModelChunk,
    ModelRequest,
    TextChunk,
    ToolConfidenceChunk,
    UsageChunk,
    for_llama_grammar,
    text_mode_messages,
)
from agentrt.models.confidence import CALL_OPENER, common_prefix, tool_confidence
from agentrt.models.context import cut_by
from agentrt.models.formats import (
    ToolFormat,
    format_for_metadata,
    format_for_name,
    template_starts_in_reasoning,
)
from agentrt.models.grammar import answer_grammar, next_call_grammar, tool_turn_grammar
from agentrt.models.more_calls import made_calls, serves_more, written_calls
from agentrt.models.prefixes import PrefixStates
from agentrt.models.weights import WeightPack, materialize, weight_packs

__all__ = ["DEFAULT_PACK", "SMALL_PACK", "LocalModel"]

DEFAULT_PACK = "qwen2.5-coder-1.5b-instruct-q4_k_m"
SMALL_PACK = "qwen2.5-coder-0.5b-instruct-q4_k_m"
RETRY_TEMPERATURE = 0.7
"""The least temperature of a retried request (`ModelRequest.retry`): at 0 the embedded model
answers a repair request with the answer it was asked to repair."""

_END = object()
_FITTING_TRIES = 4
"""Cuts tried before a prompt is found not to fit: each takes what the last count says is
over (plus a tenth), so one nearly always does."""

_log = logging.getLogger(__name__)
_llama_cpp_log = logging.getLogger("agentrt.models.llama_cpp")


class LocalModel:
    """A GGUF model run in this process.

    :param model: a weight pack name (see `weights.json`) or a path to a `.gguf` file
    :param n_ctx: context window, in tokens
    :param n_threads: CPU threads for generation; 2 suits a 2-core machine
    :param max_tokens: most tokens one answer may take (a request's own `max_tokens` wins)
    :param max_json_tokens: the same for a JSON step (a plan, a program, requirements), which
        runs longer than a turn: a `dag` plan of a dozen nodes passes 512 tokens, and one cut
        there is invalid, and cut again when repaired
    :param temperature: sampling temperature; 0 makes answers repeatable
    :param seed: sampling seed
    :param progress: called with (bytes done, bytes in all) while weights are joined, once
    :param probe_calls: when a constrained turn ends after its calls, ask the model for one
        more and keep it if it serves a part of the question the others left out (see
        `agentrt.models.more_calls`): asked for two things, small models write one call. By
        default, the weight pack's choice (on for the 0.5B, off for the 1.5B and for a file)
    :param min_tool_confidence: before a constrained turn on the user's message, measure how
        sure the model is that an offered tool serves it (`agentrt.models.confidence`); below
        this, the turn is given back unwritten, withheld (`ToolConfidenceChunk`), for the
        caller to ask again without the tools: offered tools, small models call one whether
        or not any fits. 0 turns it off. By default, the weight pack's threshold (0.3 for the
        1.5B, 0.1 for the 0.5B, read off the tool-calling benchmark's dev half), off for a file
    :param prompt_cache_mb: memory for the KV states of the last prompts read, so that a
        prompt opening like one of them (another session's conversation, the classifier's
        prompt between two runs) is not read again from its start
        (`agentrt.models.prefixes`); 0 turns it off
    """

    native_tools = True
    """Tools go to the chat template, not into agentrt's prompt (see the module docstring)."""
    calls_in_text = True
    """The model writes its calls as text, which agentrt reads (see `Model`)."""
    starts_in_reasoning = False
    """Whether the GGUF's chat template ends the prompt inside an open ``<think>`` (see
    `Model`): read from the template when the model loads, before its first answer."""

    def __init__(
        self,
        model: str | Path = DEFAULT_PACK,
        *,
        n_ctx: int = 8192,
        n_threads: int = 2,
        max_tokens: int = 512,
        max_json_tokens: int = 1536,
        temperature: float = 0.0,
        seed: int = 0,
        progress: Callable[[int, int], None] | None = None,
        probe_calls: bool | None = None,
        min_tool_confidence: float | None = None,
        prompt_cache_mb: int = 256,
    ) -> None:
        packs = weight_packs()
        self._pack: WeightPack | None = packs.get(model) if isinstance(model, str) else None
        self._path: Path | None = None
        if self._pack is not None:
            self._name = self._pack.name
        else:
            self._path = Path(model)
            if not self._path.is_file():
                msg = f"no model {str(model)!r}: give a .gguf file or one of: {', '.join(packs)}"
                raise UserError(msg)
            self._name = self._path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_tokens = max_tokens
        self.max_json_tokens = max_json_tokens
        self.temperature = temperature
        self.seed = seed
        self.progress = progress
        """Called with (bytes done, bytes in all) while the weights are joined."""
        if probe_calls is None:
            probe_calls = self._pack is not None and self._pack.probe_calls
        self.probe_calls = probe_calls
        if min_tool_confidence is None:
            min_tool_confidence = 0.0 if self._pack is None else self._pack.min_tool_confidence
        if not 0.0 <= min_tool_confidence <= 1.0:
            msg = f"min_tool_confidence is a probability, 0 to 1: got {min_tool_confidence}"
            raise UserError(msg)
        self.min_tool_confidence = min_tool_confidence
        if prompt_cache_mb < 0:
            msg = f"prompt_cache_mb is a size in MB, 0 or more: got {prompt_cache_mb}"
            raise UserError(msg)
        self._prefixes = PrefixStates(prompt_cache_mb << 20)
        self._llama: Any = None
        self._chat_template: Any = None
        """The GGUF's chat template as llama-cpp-python renders it, made when first needed."""
        self._loading = asyncio.Lock()
        self._busy = asyncio.Lock()

    @property
    def name(self) -> str:
        return self._name

    async def load(self) -> None:
        """Join the weights if needed and load the model (done by the first call otherwise)."""
        async with self._loading:
            if self._llama is None:
                self._llama = await anyio.to_thread.run_sync(self._load_blocking)
                template = self._llama.metadata.get("tokenizer.chat_template")
                if isinstance(template, str):
                    self.starts_in_reasoning = template_starts_in_reasoning(template)
                written = format_for_metadata(self._llama.metadata)
                if self.min_tool_confidence and written != "hermes":
                    msg = (
                        "min_tool_confidence reads the opening of a Hermes call "
                        f"(<tool_call>); {self._name} writes {written} calls: set it to 0"
                    )
                    raise UserError(msg)

    def _load_blocking(self) -> Any:
        path = self._path
        if path is None:
            assert self._pack is not None
            path = materialize(self._pack, progress=self.progress)
        # OpenMP threads that spin while idle starve everything else on a small machine
        # (generation fell 15x on a busy 2-core host); this must be set before llama_cpp loads.
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        try:
            from llama_cpp import Llama
        except ImportError:
            msg = "the embedded model needs llama-cpp-python: pip install 'agentrt[local]'"
            raise UserError(msg) from None
        _route_llama_cpp_logs()
        return Llama(
            model_path=str(path),
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            n_threads_batch=self.n_threads,
            seed=self.seed,
            verbose=False,
        )

    async def detect_tool_format(self) -> ToolFormat:
        """The format this model's family writes calls in, from the GGUF's chat template and
        metadata. Asked before a run starts, so it never waits for the weights: a packaged
        model is known by its name, a file by its metadata, read without the weights."""
        if self._llama is not None:
            return format_for_metadata(self._llama.metadata)
        if self._pack is not None:
            return format_for_name(self._pack.name)
        return await anyio.to_thread.run_sync(self._metadata_format)

    def _metadata_format(self) -> ToolFormat:
        from llama_cpp import Llama

        assert self._path is not None
        _route_llama_cpp_logs()
        vocab = Llama(model_path=str(self._path), vocab_only=True, verbose=False)
        return format_for_metadata(vocab.metadata)

    def completion_arguments(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments `Llama.create_chat_completion` gets for `request`: the
        conversation in text mode, sampling, and a grammar or the tools. Needs no weights."""
        messages = text_mode_messages(request.messages, request.results_nudge)
        kwargs: dict[str, Any] = {
            "messages": [_as_dict(m) for m in messages],
            "stream": True,
            "max_tokens": request.max_tokens
            or (self.max_tokens if request.json_schema is None else self.max_json_tokens),
            "temperature": self.temperature,
            "seed": self.seed,
        }
        if request.retry:
            kwargs["temperature"] = max(self.temperature, RETRY_TEMPERATURE)
            kwargs["seed"] = self.seed + request.retry
        if request.json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_object",
                "schema": for_llama_grammar(request.json_schema),
            }
        elif request.tools:
            kwargs["tools"] = [
                {"type": "function", "function": t.model_dump()} for t in request.tools
            ]
            # Past a call, small models tend to write the result themselves: stop them there.
            kwargs["stop"] = ["<tool_response>"]
            if request.constrain_tools != "off":  # `auto` is on: the grammar costs little here
                must = [t for t in request.tools if t.name in request.must_call]
                gbnf = (
                    tool_turn_grammar(must, answer=False)
                    if must
                    else tool_turn_grammar(request.tools)
                )
                kwargs["grammar"] = _llama_grammar(gbnf)
        elif request.answer_only and request.constrain_tools != "off":
            kwargs["grammar"] = _llama_grammar(answer_grammar())
        return kwargs

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        await self.load()
        kwargs = self.completion_arguments(request)
        async with self._busy:
            await anyio.to_thread.run_sync(self._fit_context, kwargs)
            await anyio.to_thread.run_sync(self._restore_prefix, kwargs)
            if self._weighs_tools(request, kwargs):
                confidence = await anyio.to_thread.run_sync(self._tool_confidence, request, kwargs)
                withheld = confidence < self.min_tool_confidence
                yield ToolConfidenceChunk(confidence=round(confidence, 4), withheld=withheld)
                if withheld:
                    return  # the caller asks again, told that no tool fits
            written: list[str] = []
            ended: str | None = None
            # Closed here, not when the garbage collector gets to it: a caller that stops
            # reading (a cut turn) must leave no generation running once the model is free,
            # or the next turn decodes beside it and llama.cpp crashes the process.
            pieces = self._pieces(self._llama.create_chat_completion, kwargs)
            async with aclosing(pieces):
                async for text, reason in pieces:
                    ended = reason or ended
                    if text:
                        written.append(text)
                        yield TextChunk(text=text)
            tokens = len(written)
            if ended == "stop" and self.probe_calls and "grammar" in kwargs:
                budget = kwargs["max_tokens"] - tokens
                async for text, used in self._more_calls(request, kwargs, "".join(written), budget):
                    tokens += used
                    yield TextChunk(text=text)
            prompt = await anyio.to_thread.run_sync(self._count_tokens, kwargs["messages"])
            yield UsageChunk(usage=Usage(prompt_tokens=prompt, completion_tokens=tokens))

    async def _more_calls(
        self, request: ModelRequest, kwargs: dict[str, Any], written: str, budget: int
    ) -> AsyncIterator[tuple[str, int]]:
        """Calls the model writes when asked for one more after its last, each kept only if it
        serves a part of the question the earlier ones left out (`more_calls`); with the
        tokens each took."""
        asked = request.messages[-1] if request.messages else None
        if asked is None or asked.role != "user":
            return  # a turn on results: its calls follow from them, not from the question
        calls = [*made_calls(request.messages), *written_calls(written)]
        if not calls:
            return
        question = asked.content
        offered = [t for t in request.tools if t.name in request.must_call] or request.tools
        head = self._chat_prompt(kwargs)
        probe = {
            "grammar": _llama_grammar(next_call_grammar(offered)),
            "temperature": kwargs["temperature"],
            "seed": kwargs["seed"],
            "stream": True,
        }
        while budget > 0:
            opened = "\n<tool_call>\n"
            pieces: list[str] = []
            ended: str | None = None
            probe.update(prompt=head + written + opened, max_tokens=budget)
            async with aclosing(self._pieces(self._llama.create_completion, probe)) as written_now:
                async for text, reason in written_now:
                    ended = reason or ended
                    if text:
                        pieces.append(text)
            call = written_calls("".join(pieces)) if ended == "stop" else []
            if len(call) != 1 or not serves_more(call[0], calls, question):
                _log.debug("asked for one more call, dropped %r", "".join(pieces))
                return
            budget -= len(pieces)
            calls.append(call[0])
            more = opened + "".join(pieces)
            written += more
            yield more, len(pieces)

    def _weighs_tools(self, request: ModelRequest, kwargs: dict[str, Any]) -> bool:
        """Whether to measure the model's confidence in the offered tools before this turn:
        one whose caller can withhold them, constrained, that may answer, on the user's message
        (a turn on tool results follows from them), offering a tool that does not answer.
        Unconstrained, the 0.5B answered the no-fit turn with invalid calls for 11 of the 12
        no-tool questions of the held-out half (0 % answered, against 33 % unweighed)."""
        return (
            request.weigh_tools
            and self.min_tool_confidence > 0
            and "grammar" in kwargs
            and not request.must_call
            and bool(request.messages)
            and request.messages[-1].role == "user"
            and any(t.name not in request.answer_tools for t in request.tools)
        )

    def _tool_confidence(self, request: ModelRequest, kwargs: dict[str, Any]) -> float:
        """The probability that the model, opening a call, names one of the offered tools
        (`agentrt.models.confidence`), exact down to `min_tool_confidence`. Runs in a worker
        thread, the model held."""
        llama = self._llama

        def tokenize(text: str) -> list[int]:
            tokens: list[int] = llama.tokenize(text.encode(), add_bos=False, special=True)
            return tokens

        return tool_confidence(
            self._chat_prompt(kwargs) + CALL_OPENER,
            [t.name for t in request.tools if t.name not in request.answer_tools],
            tokenize=tokenize,
            logprobs=self._logprobs,
            threshold=self.min_tool_confidence,
        )

    def _logprobs(self, tokens: list[int]) -> Callable[[int], float]:
        """The model's log-probability of each token after `tokens`. What the KV cache holds
        of them is kept, and the turn that follows reuses it: the prompt is evaluated once."""
        import numpy as np

        llama = self._llama
        kept = common_prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens)
        llama.n_tokens = min(kept, len(tokens) - 1)  # the last token is evaluated: its logits
        llama.eval(tokens[llama.n_tokens :])
        # Without `logits_all`, the last decode's logits are only in the context (the pinned
        # llama-cpp-python 0.3.36 keeps no copy in `Llama.scores`).
        logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),))
        logits = logits.astype(np.float64)
        top = logits.max()
        total = float(top + np.log(np.exp(logits - top).sum()))
        return lambda token: float(logits[token]) - total

    def _chat_prompt(self, kwargs: dict[str, Any]) -> str:
        """The prompt `create_chat_completion` renders for `kwargs`, from the GGUF's template."""
        if self._chat_template is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def text(token: int) -> str:
                return "" if token < 0 else self._llama.detokenize([token], special=True).decode()

            self._chat_template = Jinja2ChatFormatter(
                template=self._llama.metadata["tokenizer.chat_template"],
                eos_token=text(self._llama.token_eos()),
                bos_token=text(self._llama.token_bos()),
            )
        rendered = self._chat_template(messages=kwargs["messages"], tools=kwargs.get("tools"))
        prompt: str = rendered.prompt
        return prompt

    async def _pieces(
        self, generate: Callable[..., Any], kwargs: dict[str, Any]
    ) -> AsyncGenerator[tuple[str, str | None], None]:
        """The text pieces (tokens) `generate` streams in a worker thread, each with its finish
        reason (`stop` or `length` on the last, else None)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()
        worker = loop.run_in_executor(
            None, self._generate, generate, kwargs, stop, loop, queue.put_nowait
        )
        try:
            while (item := await queue.get()) is not _END:
                if isinstance(item, BaseException):
                    msg = f"local generation failed: {type(item).__name__}: {item}"
                    raise ModelError(msg) from item
                if not item["choices"]:
                    continue
                choice = item["choices"][0]
                text = choice["delta"].get("content") if "delta" in choice else choice["text"]
                yield text or "", choice.get("finish_reason")
        finally:
            # Stop the thread and wait for it before the next answer may use the model.
            stop.set()
            with anyio.CancelScope(shield=True):
                await worker

    def _generate(
        self,
        generate: Callable[..., Any],
        kwargs: dict[str, Any],
        stop: threading.Event,
        loop: asyncio.AbstractEventLoop,
        put: Callable[[Any], None],
    ) -> None:
        try:
            for chunk in generate(**kwargs):
                if stop.is_set():
                    break
                loop.call_soon_threadsafe(put, chunk)
        except Exception as exc:
            loop.call_soon_threadsafe(put, exc)
        finally:
            loop.call_soon_threadsafe(put, _END)

    def _fit_context(self, kwargs: dict[str, Any]) -> None:
        """Cut the conversation in `kwargs` (`agentrt.models.context`) until its prompt leaves
        the answer its tokens, up to a quarter of the window: llama.cpp refuses a prompt
        longer than the window. Runs in a worker thread, the model held.

        :raises ModelError: the system prompt and the question alone do not fit
        """
        room = self.n_ctx - min(kwargs["max_tokens"], self.n_ctx // 4)
        for _ in range(_FITTING_TRIES):
            prompt = self._chat_prompt(kwargs)
            if len(prompt.encode()) <= room:
                return  # no token is shorter than a byte: it fits, no need to count
            tokens = len(self._llama.tokenize(prompt.encode(), add_bos=False, special=True))
            if tokens <= room:
                return
            chars = int((tokens - room) * len(prompt) / tokens * 1.1) + 100
            cut = cut_by(kwargs["messages"], chars)
            if cut is None:
                break
            _log.info("prompt of %d tokens cut by %d characters to fit", tokens, chars)
            kwargs["messages"] = cut
        msg = (
            f"the prompt does not fit the {self.n_ctx}-token context window with room for an "
            "answer, even with the conversation after the question cut: shorten the "
            "instructions or offer fewer tools, or load the model with a larger n_ctx"
        )
        raise ModelError(msg)

    def _restore_prefix(self, kwargs: dict[str, Any]) -> None:
        """Keep the context's state if this prompt would replace it; load the kept state that
        spares the most of this prompt's reading, if any does. Nothing to do with the cache
        off: the prompt is not rendered and tokenized an extra time."""
        if not self._prefixes.budget:
            return
        prompt = self._chat_prompt(kwargs).encode()
        tokens = self._llama.tokenize(prompt, add_bos=False, special=True)
        spared = self._prefixes.switch(self._llama, tokens)
        if spared:
            _log.debug("a kept prompt state spares %d of %d tokens", spared, len(tokens))

    def _count_tokens(self, messages: list[dict[str, Any]]) -> int:
        text = "\n".join(str(m["content"]) for m in messages)
        return len(self._llama.tokenize(text.encode(), add_bos=False, special=True))


@functools.lru_cache(maxsize=32)
def _llama_grammar(gbnf: str) -> Any:
    from llama_cpp.llama_grammar import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)


@functools.cache
def _route_llama_cpp_logs() -> Any:
    """Send llama.cpp's own log lines to `logging` at debug, once per process.

    llama-cpp-python's callback prints them to stderr (its errors even with `verbose=False`),
    past the application's logging. They are diagnostics of the native library — a failure
    reaches agentrt as an exception — so debug is their level. The callback is process-wide,
    and kept alive by the cache: llama.cpp holds only a C pointer to it.
    """
    import ctypes

    import llama_cpp

    @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
    def to_logging(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        if _llama_cpp_log.isEnabledFor(logging.DEBUG) and (
            line := text.decode(errors="replace").rstrip()
        ):
            _llama_cpp_log.debug(line)

    llama_cpp.llama_log_set(to_logging, ctypes.c_void_p(0))
    return to_logging


def _as_dict(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": message.content}
