"""Tools: plain functions made callable by a model.

`@tool` reads the signature and the docstring (Google, NumPy or reST style) and builds a pydantic
model of the arguments; its JSON schema is what the model sees, and every call is validated
against it before the function runs. Sync functions run in a worker thread, async ones are
awaited.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, create_model

from agentrt.exceptions import ToolDefinitionError
from agentrt.models.base import ToolDefinition

__all__ = ["Tool", "tool"]


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
        cache: bool = True,
    ) -> None:
        """
        :param fn: the function; its parameters must be JSON-describable (pydantic types)
        :param name: the name the model uses; defaults to the function's name
        :param description: defaults to the docstring's summary and long description
        :param timeout: seconds before the call is abandoned; None takes the agent's default
        :param split: a character that splits a tag body into parallel calls
            (`<search>a|b</search>` with `split="|"`); needs exactly one required str parameter
        :param ends_run: calling this tool ends the run; its `answer` argument is the answer
        :param cache: an identical repeated call is answered from the run's cache; turn off
            for tools whose result changes between calls
        """
        self.fn = fn
        import docstring_parser

        self.name = name or fn.__name__
        doc = docstring_parser.parse(inspect.getdoc(fn) or "")
        summary = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
        self.description = description or summary
        if not self.description:
            msg = f"tool {self.name!r} has no description: give the function a docstring"
            raise ToolDefinitionError(msg)
        self.timeout = timeout
        self.ends_run = ends_run
        self.cache = cache
        self.is_async = inspect.iscoroutinefunction(fn)
        self.args_model = _args_model(
            self.name, fn, {p.arg_name: p.description for p in doc.params}
        )
        self.split = split
        self.text_param = _text_param(self.args_model)
        if split is not None and self.text_param is None:
            msg = (
                f"tool {self.name!r} declares split={split!r}, which needs exactly one required "
                f"str parameter to receive each part"
            )
            raise ToolDefinitionError(msg)
        if ends_run and "answer" not in self.args_model.model_fields:
            msg = f"tool {self.name!r} ends the run, so it needs an `answer` parameter"
            raise ToolDefinitionError(msg)
        self.definition = ToolDefinition(
            name=self.name,
            description=self.description,
            parameters=self.args_model.model_json_schema(),
        )
        self.schema_hash = hashlib.sha256(self.definition.model_dump_json().encode()).hexdigest()[
            :16
        ]

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (tools stay usable as functions)."""
        return self.fn(*args, **kwargs)


def _args_model(name: str, fn: Callable[..., Any], docs: dict[str, str | None]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn, eval_str=True).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            msg = f"tool {name!r}: *{param.name} / **{param.name} cannot be described to a model"
            raise ToolDefinitionError(msg)
        if param.annotation is inspect.Parameter.empty:
            msg = f"tool {name!r}: parameter {param.name!r} needs a type annotation"
            raise ToolDefinitionError(msg)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (param.annotation, Field(default, description=docs.get(param.name)))
    try:
        return create_model(
            f"{name}_arguments",
            __config__=ConfigDict(extra="forbid"),
            **fields,
        )
    except Exception as exc:
        msg = f"tool {name!r}: its parameters cannot be made into a schema: {exc}"
        raise ToolDefinitionError(msg) from exc


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
        )

    return wrap(fn) if fn is not None else wrap


def finish(answer: str) -> str:
    """Give the final answer to the user and end the run.

    Args:
        answer: The complete answer, in the user's language.
    """
    return answer


@functools.cache
def finish_tool() -> Tool:
    """The engine's own `finish` tool, offered in every run (built on first use)."""
    # Not cached: a refused finish (see the react planner's early-finish guard) may be repeated.
    return Tool(finish, ends_run=True, cache=False)
