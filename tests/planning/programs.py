"""Builders for scripted StackVM programs (tests/planning)."""

from __future__ import annotations

import json
from typing import Any


def reasoning(seq_no: int = 0, thoughts: str = "Plan the steps.") -> dict[str, Any]:
    params = {"chain_of_thoughts": thoughts, "dependency_analysis": "in order"}
    return {"seq_no": seq_no, "type": "reasoning", "parameters": params}


def assign(seq_no: int, **values: Any) -> dict[str, Any]:
    return {"seq_no": seq_no, "type": "assign", "parameters": values}


def calling(seq_no: int, tool: str, output: Any, **params: Any) -> dict[str, Any]:
    return {
        "seq_no": seq_no,
        "type": "calling",
        "parameters": {"tool_name": tool, "tool_params": params, "output_vars": output},
    }


def jmp(seq_no: int, **params: Any) -> dict[str, Any]:
    return {"seq_no": seq_no, "type": "jmp", "parameters": params}


def program(*instructions: dict[str, Any]) -> str:
    return json.dumps({"program": list(instructions)})


def verdict(result: bool) -> str:
    """A model's answer to a jmp's condition."""
    return json.dumps({"result": result, "explanation": "because"})
