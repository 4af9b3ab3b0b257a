"""agentrt: an asyncio agent runtime.

from agentrt import Agent, ScriptedModel

agent = Agent(model=ScriptedModel(["Hello!"]))
async for event in agent.run("Say hello"):
    ...
"""

from agentrt._version import __version__
from agentrt.agent import Agent, RunResult
from agentrt.events import *  # noqa: F403
from agentrt.events import __all__ as _events_all
from agentrt.exceptions import *  # noqa: F403
from agentrt.exceptions import __all__ as _exceptions_all
from agentrt.models import *  # noqa: F403
from agentrt.models import __all__ as _models_all
from agentrt.settings import AgentSettings
from agentrt.strategy import Strategy
from agentrt.tool import Tool, tool
from agentrt.trajectory import Trajectory, TrajectoryHeader
from agentrt.workspace import Workspace

__all__ = [
    "Agent",
    "AgentSettings",
    "RunResult",
    "Strategy",
    "Tool",
    "Trajectory",
    "TrajectoryHeader",
    "Workspace",
    "__version__",
    "tool",
    *_events_all,
    *_exceptions_all,
    *_models_all,
]
