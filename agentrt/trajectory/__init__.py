"""Trajectories: the recorded event stream of a run, its format, rendering and replay.

`agentrt.trajectory.format` is the format (header, reader, writer); replay lives in
`agentrt.trajectory.replay` and is imported on its own, since it runs agents.
"""

from agentrt.trajectory.format import (
    FORMAT_VERSION as FORMAT_VERSION,
)
from agentrt.trajectory.format import (
    Trajectory as Trajectory,
)
from agentrt.trajectory.format import (
    TrajectoryHeader as TrajectoryHeader,
)
from agentrt.trajectory.format import (
    json_schema as json_schema,
)
from agentrt.trajectory.writer import (
    TrajectoryWriter as TrajectoryWriter,
)
from agentrt.trajectory.writer import (
    trajectory_path as trajectory_path,
)

__all__ = [
    "FORMAT_VERSION",
    "Trajectory",
    "TrajectoryHeader",
    "TrajectoryWriter",
    "json_schema",
    "trajectory_path",
]
