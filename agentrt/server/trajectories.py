"""Internal. The trajectory files a server knows: those under its agent's trajectory folder.

    <trajectory_dir>/<yyyy-mm-dd>/<run_id>.jsonl     (`agentrt.trajectory.trajectory_path`)

Run ids reach this module only after matching `ID_PATTERN` (no slash, no leading dot), so a
lookup never leaves the folder.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from agentrt.events import RunFinishedEvent
from agentrt.server.schemas import ID_PATTERN, RunInfo, TrajectoryFile
from agentrt.trajectory.format import Trajectory, TrajectoryHeader
from agentrt.trajectory.writer import find_trajectory

__all__ = ["find_trajectory", "list_trajectories", "read_run"]

_ID = re.compile(ID_PATTERN)


def list_trajectories(directory: Path, limit: int) -> list[TrajectoryFile]:
    """The `limit` most recently written trajectory files, newest first."""
    found: list[tuple[float, int, Path]] = []
    for path in directory.glob("*/*.jsonl"):
        if not _ID.match(path.stem):
            continue  # a name GET /runs/{run_id} could not ask for
        try:
            stat = path.stat()
        except OSError:
            continue  # removed while we looked
        found.append((stat.st_mtime, stat.st_size, path))
    found.sort(key=lambda f: f[0], reverse=True)
    return [
        TrajectoryFile(
            run_id=path.stem,
            path=str(path.relative_to(directory)),
            size=size,
            modified=datetime.fromtimestamp(mtime, UTC),
            query=_query(path),
        )
        for mtime, size, path in found[:limit]
    ]


def _query(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8") as f:
            return TrajectoryHeader.model_validate_json(f.readline()).query
    except (OSError, UnicodeDecodeError, ValidationError):
        return None


def read_run(path: Path) -> RunInfo:
    """A finished (or abandoned) run from its file.

    :raises ValueError: the file is not a trajectory (the message names the file and line)
    """
    trajectory = Trajectory.read(path, torn=True)  # a run whose process died mid-line
    header, end = trajectory.header, trajectory.finished
    return RunInfo(
        run_id=header.run_id,
        state=end.status if isinstance(end, RunFinishedEvent) else "unfinished",
        query=header.query,
        session_id=header.session_id,
        answer=end.answer if end is not None else None,
        header=header,
        events=trajectory.events,
    )
