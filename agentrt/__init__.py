"""agentrt: an asyncio agent runtime.

from agentrt import Agent, LocalModel

agent = Agent(model=LocalModel())  # the default workspace, the embedded model
async for event in agent.run("What is 17.5% of 2340?"):
    ...
"""

import typing

from agentrt._version import __version__ as __version__
from agentrt.agent import (
    Agent as Agent,
)
from agentrt.agent import (
    RunResult as RunResult,
)
from agentrt.catalog.metadata import (
    CapabilityMap as CapabilityMap,
)
from agentrt.catalog.metadata import (
    ToolMetadata as ToolMetadata,
)
from agentrt.events import (
    AskEvent as AskEvent,
)
from agentrt.events import (
    ClassifiedEvent as ClassifiedEvent,
)
from agentrt.events import (
    CoverageEvent as CoverageEvent,
)
from agentrt.events import (
    Event as Event,
)
from agentrt.events import (
    EventBase as EventBase,
)
from agentrt.events import (
    GuardEvent as GuardEvent,
)
from agentrt.events import (
    IntentEvent as IntentEvent,
)
from agentrt.events import (
    ModelErrorEvent as ModelErrorEvent,
)
from agentrt.events import (
    ModelResponseEvent as ModelResponseEvent,
)
from agentrt.events import (
    NarrowedTool as NarrowedTool,
)
from agentrt.events import (
    NativeToolCall as NativeToolCall,
)
from agentrt.events import (
    NodeSkippedEvent as NodeSkippedEvent,
)
from agentrt.events import (
    PipelineStep as PipelineStep,
)
from agentrt.events import (
    PlanAdaptedEvent as PlanAdaptedEvent,
)
from agentrt.events import (
    PlanCreatedEvent as PlanCreatedEvent,
)
from agentrt.events import (
    PlanDecisionEvent as PlanDecisionEvent,
)
from agentrt.events import (
    PlanInvalidEvent as PlanInvalidEvent,
)
from agentrt.events import (
    PlannerFallbackEvent as PlannerFallbackEvent,
)
from agentrt.events import (
    PlanNode as PlanNode,
)
from agentrt.events import (
    PlanWarningEvent as PlanWarningEvent,
)
from agentrt.events import (
    RepairEvent as RepairEvent,
)
from agentrt.events import (
    RequirementsEvent as RequirementsEvent,
)
from agentrt.events import (
    RunFinishedEvent as RunFinishedEvent,
)
from agentrt.events import (
    RunStartedEvent as RunStartedEvent,
)
from agentrt.events import (
    RunStatus as RunStatus,
)
from agentrt.events import (
    StrategySelectedEvent as StrategySelectedEvent,
)
from agentrt.events import (
    TextDeltaEvent as TextDeltaEvent,
)
from agentrt.events import (
    Timings as Timings,
)
from agentrt.events import (
    ToolCallEvent as ToolCallEvent,
)
from agentrt.events import (
    ToolCallInvalidEvent as ToolCallInvalidEvent,
)
from agentrt.events import (
    ToolFinishedEvent as ToolFinishedEvent,
)
from agentrt.events import (
    ToolsNarrowedEvent as ToolsNarrowedEvent,
)
from agentrt.events import (
    ToolStartedEvent as ToolStartedEvent,
)
from agentrt.events import (
    ToolStatus as ToolStatus,
)
from agentrt.events import (
    TurnStartedEvent as TurnStartedEvent,
)
from agentrt.events import (
    Usage as Usage,
)
from agentrt.events import (
    VmInstructionEvent as VmInstructionEvent,
)
from agentrt.events import (
    event_adapter as event_adapter,
)
from agentrt.exceptions import (
    AgentrtError as AgentrtError,
)
from agentrt.exceptions import (
    ModelError as ModelError,
)
from agentrt.exceptions import (
    RequestRejected as RequestRejected,
)
from agentrt.exceptions import (
    RetriesExhausted as RetriesExhausted,
)
from agentrt.exceptions import (
    ScriptExhausted as ScriptExhausted,
)
from agentrt.exceptions import (
    StreamInterrupted as StreamInterrupted,
)
from agentrt.exceptions import (
    ToolDefinitionError as ToolDefinitionError,
)
from agentrt.exceptions import (
    ToolError as ToolError,
)
from agentrt.exceptions import (
    UserError as UserError,
)
from agentrt.exceptions import (
    WorkspaceError as WorkspaceError,
)
from agentrt.models import (
    Message as Message,
)
from agentrt.models import (
    Model as Model,
)
from agentrt.models import (
    ModelChunk as ModelChunk,
)
from agentrt.models import (
    ModelRequest as ModelRequest,
)
from agentrt.models import (
    ScriptedModel as ScriptedModel,
)
from agentrt.models import (
    ScriptedTurn as ScriptedTurn,
)
from agentrt.models import (
    TextChunk as TextChunk,
)
from agentrt.models import (
    ToolCallChunk as ToolCallChunk,
)
from agentrt.models import (
    ToolDefinition as ToolDefinition,
)
from agentrt.models import (
    UsageChunk as UsageChunk,
)
from agentrt.models.local import (
    LocalModel as LocalModel,
)
from agentrt.sessions.sqlite import (
    SqliteSessionStore as SqliteSessionStore,
)
from agentrt.sessions.store import (
    Scope as Scope,
)
from agentrt.sessions.store import (
    Session as Session,
)
from agentrt.sessions.store import (
    SessionStore as SessionStore,
)
from agentrt.sessions.store import (
    SessionTool as SessionTool,
)
from agentrt.settings import (
    AgentSettings as AgentSettings,
)
from agentrt.strategy import (
    Strategy as Strategy,
)
from agentrt.strategy import (
    Template as Template,
)
from agentrt.tool import (
    Tool as Tool,
)
from agentrt.tool import (
    ToolContext as ToolContext,
)
from agentrt.tool import (
    tool as tool,
)
from agentrt.trajectory.format import (
    Trajectory as Trajectory,
)
from agentrt.trajectory.format import (
    TrajectoryHeader as TrajectoryHeader,
)
from agentrt.workspace import (
    Workspace as Workspace,
)

if typing.TYPE_CHECKING:
    from agentrt.models.openai import OpenAIModel as OpenAIModel
    from agentrt.models.openai import OpenAISettings as OpenAISettings

__all__ = [
    "Agent",
    "AgentSettings",
    "AgentrtError",
    "AskEvent",
    "CapabilityMap",
    "ClassifiedEvent",
    "CoverageEvent",
    "Event",
    "EventBase",
    "GuardEvent",
    "IntentEvent",
    "LocalModel",
    "Message",
    "Model",
    "ModelChunk",
    "ModelError",
    "ModelErrorEvent",
    "ModelRequest",
    "ModelResponseEvent",
    "NarrowedTool",
    "NativeToolCall",
    "NodeSkippedEvent",
    "OpenAIModel",
    "OpenAISettings",
    "PipelineStep",
    "PlanAdaptedEvent",
    "PlanCreatedEvent",
    "PlanDecisionEvent",
    "PlanInvalidEvent",
    "PlanNode",
    "PlanWarningEvent",
    "PlannerFallbackEvent",
    "RepairEvent",
    "RequestRejected",
    "RequirementsEvent",
    "RetriesExhausted",
    "RunFinishedEvent",
    "RunResult",
    "RunStartedEvent",
    "RunStatus",
    "Scope",
    "ScriptExhausted",
    "ScriptedModel",
    "ScriptedTurn",
    "Session",
    "SessionStore",
    "SessionTool",
    "SqliteSessionStore",
    "Strategy",
    "StrategySelectedEvent",
    "StreamInterrupted",
    "Template",
    "TextChunk",
    "TextDeltaEvent",
    "Timings",
    "Tool",
    "ToolCallChunk",
    "ToolCallEvent",
    "ToolCallInvalidEvent",
    "ToolContext",
    "ToolDefinition",
    "ToolDefinitionError",
    "ToolError",
    "ToolFinishedEvent",
    "ToolMetadata",
    "ToolStartedEvent",
    "ToolStatus",
    "ToolsNarrowedEvent",
    "Trajectory",
    "TrajectoryHeader",
    "TurnStartedEvent",
    "Usage",
    "UsageChunk",
    "UserError",
    "VmInstructionEvent",
    "Workspace",
    "WorkspaceError",
    "__version__",
    "event_adapter",
    "tool",
]


def __getattr__(name: str) -> object:
    # The OpenAI client loads httpx, tenacity and pydantic-settings: only when asked for.
    if name in ("OpenAIModel", "OpenAISettings"):
        from agentrt.models import openai

        return getattr(openai, name)
    msg = f"module 'agentrt' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return sorted({*globals(), "OpenAIModel", "OpenAISettings"})
