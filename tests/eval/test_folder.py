"""An evaluation's output folder: results kept as they come, resumed, or started over."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentrt.eval.folder import EvalFolder, EvalIdentity
from agentrt.eval.metrics import EvalResult
from agentrt.exceptions import UserError

IDENTITY = EvalIdentity(dataset="/sets/q.jsonl", model="demo", workspace=None)


def _result(id: str) -> EvalResult:
    return EvalResult(
        id=id, status="ok", trajectory=f"trajectories/{id}.jsonl", tools=[], metrics=None
    )


def test_results_appended_are_there_on_reopening(tmp_path: Path) -> None:
    folder = EvalFolder(tmp_path / "out")
    assert folder.open(IDENTITY) == {}
    folder.append(_result("a"))
    folder.append(_result("b"))
    assert EvalFolder(tmp_path / "out").open(IDENTITY) == {"a": _result("a"), "b": _result("b")}


def test_restart_forgets_results_and_trajectories(tmp_path: Path) -> None:
    folder = EvalFolder(tmp_path)
    folder.open(IDENTITY)
    folder.append(_result("a"))
    (folder.trajectories / "day").mkdir(parents=True)
    (folder.trajectories / "day" / "run.jsonl").write_text("{}\n")
    other = IDENTITY.model_copy(update={"model": "local"})
    assert folder.open(other, restart=True) == {}
    assert not folder.trajectories.exists()
    assert EvalIdentity.model_validate_json((tmp_path / "run.json").read_text()) == other


def test_another_evaluation_is_refused(tmp_path: Path) -> None:
    EvalFolder(tmp_path).open(IDENTITY)
    other = IDENTITY.model_copy(update={"workspace": "/ws"})
    with pytest.raises(UserError, match=r"holds another evaluation .* in the built-in workspace\)"):
        EvalFolder(tmp_path).open(other)


def test_a_line_cut_short_is_dropped_and_its_question_runs_again(tmp_path: Path) -> None:
    folder = EvalFolder(tmp_path)
    folder.open(IDENTITY)
    folder.append(_result("a"))
    line = _result("b").model_dump_json()
    with folder.results_log.open("a") as log:
        log.write(line[: len(line) // 2])
    assert folder.open(IDENTITY) == {"a": _result("a")}
    assert folder.results_log.read_text() == _result("a").model_dump_json() + "\n"


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda root: (root / "run.json").write_text("{"), "run.json is damaged"),
        (lambda root: (root / "results.jsonl").write_text("[]\n"), "results.jsonl:1: not a result"),
    ],
)
def test_damage_is_named(tmp_path: Path, damage: Callable[[Path], object], message: str) -> None:
    EvalFolder(tmp_path).open(IDENTITY)
    damage(tmp_path)
    with pytest.raises(UserError, match=message):
        EvalFolder(tmp_path).open(IDENTITY)


def test_an_output_folder_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("")
    with pytest.raises(UserError, match=r"the output folder .*out is a file"):
        EvalFolder(tmp_path / "out").open(IDENTITY)
