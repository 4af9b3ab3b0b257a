"""Basic tools: exact arithmetic and dates, which language models get wrong on their own."""

from __future__ import annotations

import ast
import math
import operator
from datetime import date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agentrt import ToolError, tool

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS = {
    "sqrt": math.sqrt,
    "log": math.log,
    "exp": math.exp,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ToolError("exponent too large (the limit is 1000)")
        return _BINARY[type(node.op)](left, right)  # type: ignore[no-any-return]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))  # type: ignore[no-any-return]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_evaluate(a) for a in node.args))  # type: ignore[no-any-return,operator]
    raise ToolError(
        f"unsupported expression {ast.unparse(node)!r}: use numbers, + - * / // % **, "
        f"parentheses, {', '.join(_FUNCTIONS)} and {', '.join(_CONSTANTS)}"
    )


@tool
def calculate(expression: str) -> float:
    """Evaluate an arithmetic expression exactly, e.g. "sqrt(2) * 10". A percentage is a
    fraction: 17.5% of 2340 is "0.175 * 2340".

    Args:
        expression: Numbers with + - * / // % ** and parentheses; functions sqrt, log, exp,
            abs, round, min, max; constants pi and e.
    """
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"not an arithmetic expression: {expression!r} ({exc.msg})") from None
    try:
        return _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None


@tool
def current_time(timezone: str = "UTC") -> str:
    """The current date and time in a time zone, as ISO 8601.

    Args:
        timezone: An IANA time zone name such as "Europe/Paris" or "UTC".
    """
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(
            f"unknown time zone {timezone!r}; use an IANA name like 'Europe/Paris'"
        ) from None
    return datetime.now(zone).isoformat(timespec="seconds")


@tool
def days_between(start: date, end: date) -> int:
    """The number of days from one date to another (negative when end is before start).

    Args:
        start: The first date, YYYY-MM-DD.
        end: The second date, YYYY-MM-DD.
    """
    return (end - start).days
