"""Workspaces: strategies are data, checked at load with errors naming file and field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentrt import Workspace, WorkspaceError
from agentrt.strategy import ReactStrategy
from agentrt.workspace import default_workspace_path
from tests.helpers import TEST_WORKSPACE


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A writable copy of the test workspace."""
    return Path(shutil.copytree(TEST_WORKSPACE, tmp_path / "ws"))


def write(ws: Path, name: str, text: str) -> Path:
    path = ws / "strategies" / name
    path.write_text(text)
    return path


def test_default_workspace_loads() -> None:
    """The shipped workspace loads and every strategy's prompt renders."""
    w = Workspace()
    assert w.root == default_workspace_path()
    assert {"exploratory", "direct"} <= set(w.strategies)
    assert {"calculate", "days_between", "current_time", "finish"} <= set(w.tools)
    for s in w.strategies.values():
        assert w.render(s.instructions, tools=[])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "description: x\nstep_budget: 0\ninstructions: testing.j2\n",
            "field 'step_budget': Input should be greater than 0",
        ),
        ("description: x\ninstructions: testing.j2\n", "field 'step_budget': Field required"),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\nbudget: 3\n",
            "field 'budget': Extra inputs are not permitted",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\nplanner: magic\n",
            "field 'planner': Input should be 'react'",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: nowhere.j2\n",
            "field 'instructions': no prompt file 'nowhere.j2' in prompts/",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\ntools: [echo, warp]\n",
            "field 'tools': no tool named 'warp' in the workspace",
        ),
        (
            'description: x\nstep_budget: 2\ninstructions: testing.j2\nresults_nudge: ""\n',
            "field 'results_nudge': String should have at least 1 character",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\nresults_nudge: [a, b]\n",
            "field 'results_nudge': Input should be a valid string",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\nplanner: pipeline\n"
            "retrieve: 4\n",
            "field 'retrieve' does not apply to the pipeline planner (only to react, dag, vm)",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\nvm: {repairs: 1}\n",
            "field 'vm' does not apply to the react planner (only to vm)",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\nplanner: vm\n"
            "vm: {builtins: [oracle]}\n",
            "field 'vm.builtins': no tool named 'oracle' in the workspace",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\nafter: {add: [oracle]}\n",
            "field 'after': no tool named 'oracle' in the workspace",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\nanswer_needs: [oracle]\n",
            "field 'answer_needs': no tool named 'oracle' in the workspace",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\n"
            "on_request: {oracle: [ask]}\n",
            "field 'on_request': no tool named 'oracle' in the workspace",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\non_request: {add: []}\n",
            "on_request.add",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\n"
            "first_calls: [{tool: oracle}]\n",
            "field 'first_calls': no tool named 'oracle' in the workspace",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\ntools: [add]\n"
            "first_calls: [{tool: echo, arguments: {text: '{query}'}}]\n",
            "field 'first_calls': 'echo' is not among the strategy's tools",
        ),
        (
            "description: x\nstep_budget: 2\ninstructions: testing.j2\nplanner: dag\n"
            "first_calls: [{tool: echo}]\n",
            "field 'first_calls' does not apply to the dag planner (only to react)",
        ),
        ("description: x\nstep_budget: [1\n", "not valid YAML"),
        ("- just\n- a list\n", "expected a mapping of fields, got list"),
    ],
    ids=[
        "budget-zero",
        "budget-missing",
        "unknown-field",
        "planner",
        "prompt",
        "tool",
        "nudge-empty",
        "nudge-not-text",
        "other-planners-field",
        "policy-of-another-planner",
        "vm-builtin",
        "after-tool",
        "answer-needs-tool",
        "on-request-tool",
        "on-request-no-words",
        "first-call-tool",
        "first-call-not-offered",
        "first-call-of-another-planner",
        "yaml",
        "shape",
    ],
)
def test_bad_strategy_file(ws: Path, text: str, message: str) -> None:
    """A bad strategy file fails the load, naming the file and the field."""
    path = write(ws, "broken.yaml", text)
    with pytest.raises(WorkspaceError) as info:
        Workspace(ws)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("query", "unasked"),
    [
        ("Who sold the most?", {"plot_bar", "plot_line"}),
        ("Compare the stores", {"plot_line"}),  # the start of a word: "compar"
        ("Charts of sales, please", set()),  # case aside, and a word's longer form
        ("Sales over time", {"plot_bar"}),  # a phrase
    ],
)
def test_tools_on_request(query: str, unasked: set[str]) -> None:
    strategy = ReactStrategy(
        name="s",
        description="x",
        step_budget=2,
        instructions="testing.j2",
        on_request={"plot_bar": ["chart", "bar", "compar"], "plot_line": ["chart", "over time"]},
    )
    assert strategy.unasked(query) == unasked


def test_broken_tool_pack(ws: Path) -> None:
    """A tool pack that fails to import is named, with the error."""
    pack = ws / "tools" / "broken.py"
    pack.write_text("import not_a_module_anywhere\n")
    with pytest.raises(
        WorkspaceError, match=r"broken\.py: tool pack failed to import: ModuleNotFoundError"
    ):
        Workspace(ws)


def test_duplicate_tool_names(ws: Path) -> None:
    """Two packs defining the same tool name is an error naming both files."""
    (ws / "tools" / "again.py").write_text(
        "from agentrt import tool\n\n"
        "@tool\ndef echo(text: str) -> str:\n    '''Echo.'''\n    return text\n"
    )
    with pytest.raises(
        WorkspaceError, match=r"tool 'echo' is defined in both .*again\.py and .*testing\.py"
    ):
        Workspace(ws)


def test_missing_strategies(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="has no strategies/ folder"):
        Workspace(tmp_path)
