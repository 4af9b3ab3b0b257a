"""Internal. Writing a run's trajectory: its events buffered and appended to one JSONL file."""

from __future__ import annotations

import os
import time
from contextvars import ContextVar
from pathlib import Path

from pydantic import ValidationError

from agentrt.events import EventBase, event_adapter
from agentrt.exceptions import UserError
from agentrt.logs import get_logger
from agentrt.trajectory.format import Trajectory, TrajectoryHeader

__all__ = ["TrajectoryWriter", "find_trajectory", "keep_json", "trajectory_path"]

log = get_logger("agentrt.trajectory")

keep_json: ContextVar[bool] = ContextVar("agentrt_keep_json", default=False)
"""Whether the events written keep their JSON (`EventBase.json_bytes`) for readers to come.

A server sets it in the task that consumes a run (the run's own tasks inherit it), so that its
streams send the bytes the trajectory got, serialised once. Off elsewhere: the JSON would live
on each event as long as whoever keeps the event (it cost 14% more memory per concurrent run
when results kept their events, measured at 300 at once), for no reader.
"""


class TrajectoryWriter:
    """Buffers a run's events and appends them to its file between turns and at the end.

    Between turns it writes once a second or every 32 events, whichever comes first: a slow
    run (a real model) is on disk turn by turn, a fast one is not slowed by a write per turn.
    Besides, the run writes each model answer and each tool call's start and end before it
    goes on (`RunContext.emit`): a completed side effect is on disk before anything else
    happens, so a run whose process dies resumes (`agent.resume`) without doing it again. On
    the overhead benchmark (10 turns × 4 no-op tools) this costs about 8% per turn (583 →
    629 µs) and 2–4% of runs per second.
    The file is opened only to append, so a thousand concurrent runs hold no file handles.
    A failure to write is logged once and writing stops; the run itself goes on, and the
    events not written stay in memory, so `recorded` still has them all. With no file
    (`path` None) every event stays in memory, serialised.
    """

    EVERY_SECONDS = 1.0
    EVERY_EVENTS = 32

    def __init__(self, path: Path | None) -> None:
        self.path = path
        """Where events go; None to keep them in memory."""
        self._file = path
        self._lines: list[bytes] = []
        """Events serialised and not yet written (with no file, or once writing failed: all
        those not in the file)."""
        self._written = 0
        """How many events `_file` holds."""
        self._header_written = False
        self._broken = False
        self._last_write = time.monotonic()
        self._recorded: Trajectory | None = None

    def add(self, event: EventBase) -> None:
        if keep_json.get():
            self._lines.append(event.json_bytes)
        else:
            # The serializer itself, not `model_dump_json`: bytes, and a third less time.
            self._lines.append(event.__pydantic_serializer__.to_json(event))

    def flush_if_due(self, header: TrajectoryHeader) -> None:
        if (
            len(self._lines) >= self.EVERY_EVENTS
            or time.monotonic() - self._last_write >= self.EVERY_SECONDS
        ):
            self.flush(header)

    def flush(self, header: TrajectoryHeader) -> None:
        """Append the buffered events, after `header` if the file is new."""
        self._last_write = time.monotonic()
        if self.path is None or self._broken or (self._header_written and not self._lines):
            return
        lines = self._lines
        if not self._header_written:
            lines = [header.__pydantic_serializer__.to_json(header), *lines]
        data = b"\n".join(lines) + b"\n"
        try:
            try:
                fd = os.open(self.path, _APPEND)
            except FileNotFoundError:  # the first run of the day: make its folder
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, _APPEND)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        except OSError as exc:
            self._broken = True
            log.warning("trajectory not written", path=str(self.path), error=str(exc))
            return
        self._header_written = True
        self._written += len(self._lines)
        self._lines = []

    def detach(self) -> None:
        """Write nothing to the file from now on (it is not this run's to write): the events
        stay in memory."""
        self.path = None

    def recorded(self, header: TrajectoryHeader) -> Trajectory:
        """The run's trajectory, once it has ended: the events its file holds, read back,
        then those kept in memory; read once, then kept.

        :raises UserError: the file no longer holds the events written to it
        """
        if self._recorded is not None:
            return self._recorded
        written: list[bytes] = []
        try:
            if self._file is not None and self._written:
                written = self._file.read_bytes().split(b"\n")[1 : 1 + self._written]
            events = [event_adapter.validate_json(line) for line in [*written, *self._lines]]
        except (OSError, ValidationError) as exc:  # what is in memory was validated: the file
            msg = f"the run's trajectory {self._file} cannot be read back: {exc}"
            raise UserError(msg) from None
        self._recorded = Trajectory(header=header, events=events)
        return self._recorded


_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT


def trajectory_path(directory: Path, run_id: str) -> Path:
    """`<directory>/<yyyy-mm-dd>/<run_id>.jsonl`, dated in UTC."""
    return directory / time.strftime("%Y-%m-%d", time.gmtime()) / f"{run_id}.jsonl"


def find_trajectory(directory: Path, run_id: str) -> Path | None:
    """The file of run `run_id`, in whichever day's folder it was started."""
    return next(iter(sorted(directory.glob(f"*/{run_id}.jsonl"))), None)
