"""Tools: plain functions made callable by a model.

`@tool` reads the signature and the docstring (Google, NumPy or reST style) and builds a pydantic
model of the arguments; every call is validated against it before the function runs, and the
model sees its JSON schema made minimal (`minimal_schema`). Sync functions run in a worker
thread, async ones are awaited. A parameter annotated `ToolContext` is not for the model: the
executor fills it with what the tool may know of the run calling it; `ToolContext[D]` also
carries the run's dependencies (`ctx.deps`, of type `D`: a database connection, an HTTP client,
the user), given to `Agent.run(..., deps=...)`.

The executor does not call tool functions itself: it hands each call to a `ToolRunner`, by
default `run_tool`. That is the seam a replay uses to answer calls from a recording instead.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, get_args, get_origin, overload

import anyio
from pydantic import BaseModel, ConfigDict, Field, create_model
from typing_extensions import TypeVar

from agentrt.exceptions import ToolDefinitionError, ToolError
from agentrt.models.base import ModelRequest, ToolDefinition
from agentrt.sessions.store import Scope, SessionTool

__all__ = [
    "Tool",
    "ToolContext",
    "ToolRunner",
    "ToolStorage",
    "minimal_schema",
    "run_tool",
    "tool",
]

DepsT = TypeVar("DepsT", default=Any)


@dataclass(frozen=True, slots=True)
class ToolStorage:
    """What a run's tools keep, and what they are given: the agent builds one per run, from
    the run's session and its `deps`."""

    artifacts: dict[str, Any]
    """What tools keep between calls (data frames, …), by name: the run's, or its session's
    (a session's runs share one)."""
    output_dir: Path
    """Where tools write files (charts, tables); made when first written to."""
    deps: Any = None
    """The run's dependencies (`Agent.run(..., deps=...)`), handed to tools as `ctx.deps`."""


@dataclass(frozen=True, slots=True)
class ToolContext(Generic[DepsT]):
    """What a tool may know of the run calling it. Declare a parameter of this type to get it:
    `ctx: ToolContext[Database]` types `ctx.deps` as a `Database`."""

    run_id: str
    session_id: str | None
    """None for a run outside any session: its session tools last as long as the run."""
    call_id: str
    step: int
    scope: Scope | None
    """The contexts and items the run is restricted to, if it is."""
    add_session_tool: Callable[[SessionTool], None]
    """Offer a new tool for the rest of the run and the session's later runs (raises
    `ToolError` if it is not valid: unknown base, unknown arguments)."""
    complete: Callable[[ModelRequest], Awaitable[str]]
    """Ask the run's model; the call is recorded in the trajectory like any other."""
    artifacts: dict[str, Any]
    """What tools keep between calls (data frames, …), by name: the run's, or its session's."""
    output_dir: Path
    """Where to write files (charts, tables): beside the run's trajectory. Make it first."""
    deps: DepsT
    """What the run was given as `deps` (None when it was given none)."""


ToolRunner = Callable[["Tool", dict[str, Any], ToolContext], Awaitable[Any]]
"""Invokes one admitted call for the executor: the tool, its validated arguments, and the
context of the call. What it returns is the call's output; what it raises, its error (a
`TimeoutError` reads as the call's timeout). Pass another to `Agent(tool_runner=...)` to
answer calls without running the tools (`agentrt.trajectory.replay.RecordedTools`)."""


async def run_tool(tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Any:
    """The default `ToolRunner`: call the tool's function, giving it the context if it takes
    one. Async functions are awaited, sync ones run in a worker thread.

    :raises ToolError: a sync tool whose calls that hung past their timeout still hold
        `tool.max_hung_threads` threads: it is not called again until one of them returns
    """
    if tool.context_param is not None:
        arguments = {**arguments, tool.context_param: context}
    return await call_tool(tool, arguments)


def call_tool(tool: Tool, arguments: dict[str, Any]) -> Awaitable[Any]:
    """`tool`'s function called with `arguments`, as `run_tool` calls it once it has added the
    context: the executor calls this itself for a tool that takes no context, which then needs
    none built. An async function's own coroutine, a sync one's call in a worker thread."""
    if tool.is_async:
        return tool.fn(**arguments)  # type: ignore[no-any-return]
    return tool.hung.run(tool, functools.partial(tool.fn, **arguments))


class _HungThreads:
    """The worker threads a sync tool's abandoned calls still hold.

    A thread cannot be interrupted: on timeout or cancellation a sync call is abandoned, its
    result dropped when it comes, but its thread runs on. A tool that hangs would take a new
    thread on every call (98 were seen); so each tool's abandoned calls are counted until
    their threads return, and at `Tool.max_hung_threads` the tool is refused instead of run.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0
        """Abandoned calls whose threads have not returned yet."""

    async def run(self, tool: Tool, call: Callable[[], Any]) -> Any:
        """`call()` in a worker thread, counted as hung if it is abandoned before it returns."""
        if self.count >= tool.max_hung_threads:
            msg = (
                f"{tool.name} was not run: {self.count} earlier call(s) of it hung past their "
                f"timeout and still hold worker threads (at most {tool.max_hung_threads}). "
                "It cannot be called until they return; do without it or try again later."
            )
            raise ToolError(msg)
        state = {"started": False, "returned": False, "abandoned": False}

        def work() -> Any:
            with self._lock:
                if state["abandoned"]:
                    return None  # given up before its thread took it: never run, never counted
                state["started"] = True
            try:
                return call()
            finally:
                with self._lock:
                    state["returned"] = True
                    if state["abandoned"]:
                        self.count -= 1

        try:
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except BaseException:
            with self._lock:
                if not state["returned"]:
                    state["abandoned"] = True
                    # Only a call whose thread runs it holds that thread; one given up while
                    # waiting for a thread would otherwise stay counted forever (seen on a
                    # loaded machine: the timeout came before a worker took the call).
                    if state["started"]:
                        self.count += 1
            raise


class Tool:
    """A function with a validated argument model. Build one with `@tool`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        split: str | None = None,
        ends_run: bool = False,
        asks_user: bool = False,
        cache: bool = True,
        requires_approval: bool = False,
        args_model: type[BaseModel] | None = None,
        context_param: str | None = None,
        max_hung_threads: int = 4,
        limit: asyncio.Semaphore | None = None,
    ) -> None:
        """
        :param fn: the function; its parameters must be JSON-describable (pydantic types)
        :param name: the name the model uses; defaults to the function's name
        :param description: defaults to the docstring's summary and long description
        :param timeout: seconds before the call is abandoned; None takes the agent's default
        :param split: a character that splits a tag body into parallel calls
            (`<search>a|b</search>` with `split="|"`); needs exactly one required str parameter
        :param ends_run: calling this tool ends the run; its `answer` argument is the answer
        :param asks_user: calling this tool pauses the run to ask the user: its result is the
            question, the run ends `needs_input`, and the session's next run gets the reply
        :param cache: an identical repeated call is answered from the run's cache; turn off
            for tools whose result changes between calls
        :param requires_approval: each call waits for a person's approval (`Agent.resume`)
        :param args_model: the argument model, when it is not to be read from the signature
            (with `context_param`, the parameter that receives the `ToolContext`)
        :param max_hung_threads: hung sync calls (see `_HungThreads`) at which calls are refused
        :param limit: a cap shared with other tools (an MCP server's `max_concurrency`): the
            executor holds it for each call, over every run, and starts the call's timeout only
            once it has it, so waiting for a slot is never a timeout
        """
        summary, docs = _read_docstring(fn)
        self.fn = fn
        self.name = name or fn.__name__
        self.description = description or summary
        self.timeout, self.limit = timeout, limit
        self.ends_run, self.asks_user = ends_run, asks_user
        self.cache, self.requires_approval = cache, requires_approval
        self.is_async = inspect.iscoroutinefunction(fn)
        self.max_hung_threads, self.hung = max_hung_threads, _HungThreads()  # process-wide
        if args_model is None:
            args_model, context_param = _args_model(self.name, fn, docs)
        self.args_model = args_model
        self.context_param = context_param
        """The parameter that receives the `ToolContext`, if the function takes one."""
        self.deps_type = _deps_type(fn, context_param)
        """`D` of the function's `ToolContext[D]`: the tool needs a run given such deps. None
        when it needs none (no context, a bare `ToolContext`, or `ToolContext[None]`)."""
        self.split = split
        self.text_param = _text_param(self.args_model)
        self._check()
        self.definition = self._definition()
        digest = hashlib.sha256(self.definition.model_dump_json().encode())
        self.schema_hash = digest.hexdigest()[:16]

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def _check(self) -> None:
        """Refuse a declaration the model could not use."""
        if not self.description:
            msg = f"tool {self.name!r} has no description: give the function a docstring"
            raise ToolDefinitionError(msg)
        if self.split is not None and self.text_param is None:
            msg = (
                f"tool {self.name!r} declares split={self.split!r}, which needs exactly one "
                f"required str parameter to receive each part"
            )
            raise ToolDefinitionError(msg)
        if self.max_hung_threads < 1:
            msg = (
                f"tool {self.name!r}: max_hung_threads must be at least 1, "
                f"not {self.max_hung_threads}"
            )
            raise ToolDefinitionError(msg)
        if self.ends_run and "answer" not in self.args_model.model_fields:
            msg = f"tool {self.name!r} ends the run, so it needs an `answer` parameter"
            raise ToolDefinitionError(msg)

    def _definition(self) -> ToolDefinition:
        try:
            parameters = minimal_schema(self.args_model.model_json_schema())
        except Exception as exc:  # pydantic's errors for types with no JSON schema vary
            msg = f"tool {self.name!r}: its parameters cannot be made into a JSON schema: {exc}"
            raise ToolDefinitionError(msg) from exc
        return ToolDefinition(name=self.name, description=self.description, parameters=parameters)

    def bind(self, name: str, description: str, arguments: Mapping[str, Any]) -> Tool:
        """A new tool that calls this one with `arguments` fixed; the model gives the rest.

        :raises ToolDefinitionError: an argument this tool does not take, or a bad value
        """
        fields = self.args_model.model_fields
        unknown = sorted(set(arguments) - set(fields))
        if unknown:
            msg = (
                f"tool {self.name!r} takes no argument {', '.join(map(repr, unknown))} "
                f"(it takes: {', '.join(fields)})"
            )
            raise ToolDefinitionError(msg)
        rest = {k: (f.annotation, f) for k, f in fields.items() if k not in arguments}
        reduced = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **rest)  # type: ignore[call-overload]
        base, fixed, context = self.fn, dict(arguments), self.context_param

        def merged(kwargs: dict[str, Any]) -> dict[str, Any]:
            given = {k: v for k, v in kwargs.items() if k != context}
            values = dict(self.args_model.model_validate({**fixed, **given}))
            return values | ({context: kwargs[context]} if context else {})

        async def call_async(**kwargs: Any) -> Any:
            return await base(**merged(kwargs))

        def call_sync(**kwargs: Any) -> Any:
            return base(**merged(kwargs))

        bound = Tool(
            call_async if self.is_async else call_sync,
            name=name,
            description=description,
            timeout=self.timeout,
            cache=self.cache,
            args_model=reduced,
            context_param=context,
        )
        bound.deps_type = self.deps_type
        return bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (tools stay usable as functions)."""
        return self.fn(*args, **kwargs)


def _args_model(
    name: str, fn: Callable[..., Any], docs: dict[str, str | None]
) -> tuple[type[BaseModel], str | None]:
    """The argument model of `fn`, and the parameter that takes the `ToolContext` (if any)."""
    fields: dict[str, Any] = {}
    context_param = None
    for param in _signature(name, fn).parameters.values():
        if _is_context(param.annotation):
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            msg = f"tool {name!r}: *{param.name} / **{param.name} cannot be described to a model"
            raise ToolDefinitionError(msg)
        if param.annotation is inspect.Parameter.empty:
            msg = f"tool {name!r}: parameter {param.name!r} needs a type annotation"
            raise ToolDefinitionError(msg)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (param.annotation, Field(default, description=docs.get(param.name)))
    try:
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    except Exception as exc:
        msg = f"tool {name!r}: its parameters cannot be made into a schema: {exc}"
        raise ToolDefinitionError(msg) from exc
    return model, context_param


# Keywords whose values are data, not schemas: kept verbatim (a default may hold a "title" key).
_DATA_KEYWORDS = frozenset({"default", "enum", "const", "examples", "required"})
# Keywords whose values map names to schemas: the names are kept (a parameter may be "title").
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties"})
# Dropped: titles (the 0.5B called a tool named after its argument model's title), definitions
# (inlined below), and OpenAPI's discriminator, whose mapping points into the definitions.
_DROPPED = frozenset({"title", "$defs", "definitions", "discriminator"})


def minimal_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as a model should be shown it: no titles, every `$ref` inlined.

    Pydantic's schemas carry what a model copies instead of reading: the argument model's
    title (`search_arguments`, written as the tool's name) and `{"$ref": "#/$defs/JsonValue"}`
    (pasted into arguments as a value). Descriptions, types, enums, required, defaults and
    `additionalProperties` stay. Any JSON value (pydantic's `JsonValue`) reads as an empty
    schema; a model that refers to itself is cut where it recurs, to a plain object.
    """
    defs = schema.get("$defs", {})
    minimal: dict[str, Any] = _inline(schema, defs if isinstance(defs, dict) else {}, frozenset())
    return minimal


def _inline(node: Any, defs: dict[str, Any], expanding: frozenset[str]) -> Any:
    if isinstance(node, list):
        return [_inline(v, defs, expanding) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        target = defs.get(name)
        if name in expanding or not isinstance(target, dict):
            inlined: dict[str, Any] = {"type": "object"}
        else:
            inlined = _inline(target, defs, expanding | {name})
        # Keywords beside the reference (a field's description, default) win over the target's.
        siblings = _inline({k: v for k, v in node.items() if k != "$ref"}, defs, expanding)
        return {**inlined, **siblings}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key in _DATA_KEYWORDS:
            out[key] = value
        elif key in _NAMED_SCHEMAS and isinstance(value, dict):
            out[key] = {n: _inline(v, defs, expanding) for n, v in value.items()}
        else:
            out[key] = _inline(value, defs, expanding)
    return out


def _read_docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str | None]]:
    """The function's description (summary and long description), and its parameters'."""
    import docstring_parser

    if not callable(fn):
        msg = f"{fn!r} is not a function, so it cannot be a tool"
        raise ToolDefinitionError(msg)
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    summary = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
    return summary, {p.arg_name: p.description for p in doc.params}


def _signature(name: str, fn: Callable[..., Any]) -> inspect.Signature:
    try:
        return inspect.signature(fn, eval_str=True)
    except NameError as exc:  # an annotation naming what the function's module lacks
        msg = f"tool {name!r}: an annotation cannot be resolved: {exc}"
        raise ToolDefinitionError(msg) from exc


def _is_context(annotation: Any) -> bool:
    return annotation is ToolContext or get_origin(annotation) is ToolContext


def _deps_type(fn: Callable[..., Any], context_param: str | None) -> Any | None:
    """What the function's `ToolContext[D]` parameter says `D` is (None: it needs none)."""
    if context_param is None:
        return None
    param = inspect.signature(fn, eval_str=True).parameters.get(context_param)
    args = get_args(param.annotation) if param is not None else ()
    if not args or args[0] in (None, type(None), Any):
        return None
    return args[0]


def _text_param(model: type[BaseModel]) -> str | None:
    """The single required str parameter a plain-text tag body maps to, if there is one."""
    required = [n for n, f in model.model_fields.items() if f.is_required()]
    if len(required) == 1 and model.model_fields[required[0]].annotation is str:
        return required[0]
    return None


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    split: str | None = None,
    ends_run: bool = False,
    cache: bool = True,
    requires_approval: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    split: str | None = None,
    ends_run: bool = False,
    cache: bool = True,
    requires_approval: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function into a `Tool`, bare (`@tool`) or with options (`@tool(timeout=5)`)."""

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(
            f,
            name=name,
            description=description,
            timeout=timeout,
            split=split,
            ends_run=ends_run,
            cache=cache,
            requires_approval=requires_approval,
        )

    return wrap(fn) if fn is not None else wrap
