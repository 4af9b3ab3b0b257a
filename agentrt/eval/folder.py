"""Internal. An evaluation's output folder, which makes a long evaluation resumable.

    <out>/run.json        what is evaluated (data set, model, workspace): a rerun resumes only
                          the same evaluation
    <out>/results.jsonl   one result per line, appended the moment each run finishes
    <out>/trajectories/   every run's trajectory (and the files its tools wrote)
    <out>/results.json    every result and the summary, written when the evaluation ends
    <out>/report.html     the same, for people (`agentrt.eval.report`)

A rerun reads `results.jsonl` and runs only the questions it does not answer yet.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from agentrt.eval.metrics import EvalResult, EvalSummary
from agentrt.exceptions import UserError

__all__ = ["EvalFolder", "EvalIdentity", "EvalReport"]


class EvalIdentity(BaseModel):
    """What makes two evaluations the same one, so that one may resume the other."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    """The question set, as an absolute path."""
    model: str
    workspace: str | None
    """The workspace folder, as an absolute path; None: the built-in one."""


class EvalReport(BaseModel):
    """`results.json`: an evaluation, whole."""

    evaluation: EvalIdentity
    summary: EvalSummary
    results: list[EvalResult]


class EvalFolder:
    """The output folder of one evaluation (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.results_log = root / "results.jsonl"
        self.results_json = root / "results.json"
        self.report_html = root / "report.html"
        self.trajectories = root / "trajectories"
        self._identity = root / "run.json"

    def open(self, identity: EvalIdentity, *, restart: bool = False) -> dict[str, EvalResult]:
        """Start or resume the evaluation `identity`; return the results already there, by id.

        :param restart: forget earlier results and trajectories and start over
        :raises UserError: the folder holds another evaluation, or a results line is damaged
        """
        if self.root.exists() and not self.root.is_dir():
            msg = f"the output folder {self.root} is a file"
            raise UserError(msg)
        if restart:
            self._clear()
        elif self._identity.exists():
            try:
                earlier = EvalIdentity.model_validate_json(
                    self._identity.read_text(encoding="utf-8")
                )
            except ValidationError:
                msg = f"{self._identity} is damaged: pass --restart to start over"
                raise UserError(msg) from None
            if earlier != identity:
                msg = (
                    f"{self.root} holds another evaluation ({_describe(earlier)}), not this one "
                    f"({_describe(identity)}): pass --restart to replace it, or choose another "
                    "output folder"
                )
                raise UserError(msg)
        self.root.mkdir(parents=True, exist_ok=True)
        self._identity.write_text(identity.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return self._read_results()

    def append(self, result: EvalResult) -> None:
        """Record a finished result at once, so that an interrupted evaluation keeps it."""
        with self.results_log.open("a", encoding="utf-8") as log:
            log.write(result.model_dump_json() + "\n")

    def write_report(self, report: EvalReport) -> None:
        self.results_json.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")

    def _read_results(self) -> dict[str, EvalResult]:
        if not self.results_log.exists():
            return {}
        text = self.results_log.read_text(encoding="utf-8")
        lines = text.splitlines()
        results: dict[str, EvalResult] = {}
        for number, line in enumerate(lines, start=1):
            try:
                result = EvalResult.model_validate_json(line)
            except ValidationError:
                if number == len(lines) and not text.endswith("\n"):
                    # A line cut short by an interruption: that question runs again.
                    self.results_log.write_text(
                        "".join(f"{kept}\n" for kept in lines[:-1]), encoding="utf-8"
                    )
                    break
                msg = (
                    f"{self.results_log}:{number}: not a result; fix or delete the line, or pass "
                    "--restart"
                )
                raise UserError(msg) from None
            results[result.id] = result
        return results

    def _clear(self) -> None:
        for path in (self.results_log, self.results_json, self.report_html, self._identity):
            path.unlink(missing_ok=True)
        shutil.rmtree(self.trajectories, ignore_errors=True)


def _describe(identity: EvalIdentity) -> str:
    workspace = identity.workspace or "the built-in workspace"
    return f"{identity.dataset} with model {identity.model!r} in {workspace}"
