"""agentrt: an asyncio agent runtime.

```python
from agentrt import Agent, LocalModel

def percent(rate: float, of: float) -> float:
    '''`rate` percent of `of`.'''
    return rate / 100 * of

agent = Agent(LocalModel(), tools=[percent])  # the embedded model, no workspace folder
result = await agent.run("What is 17.5% of 2340?")  # or: async for event in agent.run(...)
```

The names below are the stable API; the modules users may import beside it are listed in the
README ("Public API"). Every other module is internal.
"""

import importlib
import typing

from agentrt._version import __version__

# The agent, what a run returns, and the tool metadata a workspace's registry holds.
from agentrt.agent import Agent
from agentrt.catalog.metadata import CapabilityMap, ToolMetadata

# Events: one discriminated union on `type` (`Event`), streamed, recorded and replayed alike.
from agentrt.events import (
    AnswerDoubt,
    ApprovalRequestedEvent,
    Approve,
    AskEvent,
    ClassifiedEvent,
    CoverageEvent,
    Decision,
    Event,
    EventBase,
    GuardEvent,
    IntentEvent,
    ModelErrorEvent,
    ModelResponseEvent,
    NarrowedTool,
    NativeToolCall,
    NodeSkippedEvent,
    OutputDeltaEvent,
    PendingCall,
    PipelineStep,
    PlanAdaptedEvent,
    PlanCreatedEvent,
    PlanDecisionEvent,
    PlanInvalidEvent,
    PlannerFallbackEvent,
    PlanNode,
    PlanWarningEvent,
    ReasoningDeltaEvent,
    Reject,
    RepairEvent,
    RequirementsEvent,
    RunFinishedEvent,
    RunResumedEvent,
    RunStartedEvent,
    RunStatus,
    StrategySelectedEvent,
    TextDeltaEvent,
    Timings,
    ToolCallEvent,
    ToolCallInvalidEvent,
    ToolFinishedEvent,
    ToolsNarrowedEvent,
    ToolStartedEvent,
    ToolStatus,
    TurnStartedEvent,
    Usage,
    VmInstructionEvent,
    event_adapter,
)

# Errors: `UserError` and its kin for the developer, `ToolError` for the model.
from agentrt.exceptions import (
    AgentrtError,
    ModelError,
    OutputInvalid,
    RequestRejected,
    RetriesExhausted,
    RunFailed,
    ScriptExhausted,
    SessionConflict,
    StoreUnavailable,
    StreamInterrupted,
    ToolDefinitionError,
    ToolError,
    UserError,
    WorkspaceError,
)

# MCP servers whose tools an agent offers (`Agent(mcp_servers=[...])`), and what fails them.
from agentrt.mcp.client import MCPServerError
from agentrt.mcp.config import MCPServer

# Models: the interface, what flows through it, and the backends (LocalModel and OpenAIModel
# below, lazily).
from agentrt.models import (
    Message,
    Model,
    ModelChunk,
    ModelRequest,
    ReasoningChunk,
    ScriptedModel,
    ScriptedTurn,
    TextChunk,
    ToolCallChunk,
    ToolConfidenceChunk,
    ToolDefinition,
    UsageChunk,
)
from agentrt.result import AgentRun, RunResult

# Sessions: conversations kept across runs, in memory or in SQLite (SqliteSessionStore below,
# lazily).
from agentrt.sessions.store import (
    MemorySessionStore,
    RunRecord,
    Scope,
    Session,
    SessionStore,
    SessionTool,
    Turn,
    open_store,
)

# Settings and strategies.
from agentrt.settings import AgentSettings
from agentrt.strategy import Strategy, Template

# Tools.
from agentrt.tool import Tool, ToolContext, tool

# Trajectories: a run's events as JSONL, headed by what reproduces it.
from agentrt.trajectory.format import Trajectory, TrajectoryHeader

# The workspace: strategies, tool packs, tool metadata and prompts, loaded from a folder.
from agentrt.workspace import Workspace

# Backends only some programs use are imported when first asked for (PEP 562 `__getattr__`
# below), so that `import agentrt` does not pay for them: the OpenAI client loads httpx,
# tenacity and pydantic-settings, the embedded model its chat-template and weight-pack code,
# the SQLite store its schema adapters. `__all__`, `dir()` and these imports keep every
# name visible to type checkers and IDEs. The pydantic models this import defines are declared
# `defer_build=True`: a model's schema is built when it first validates, so a program pays for
# the models it uses rather than for the sixty-odd the import would otherwise build.
if typing.TYPE_CHECKING:
    from agentrt.models.local import LocalModel
    from agentrt.models.openai import OpenAIModel, OpenAISettings
    from agentrt.sessions.sqlite import SqliteSessionStore

_LAZY = {
    "LocalModel": "agentrt.models.local",
    "OpenAIModel": "agentrt.models.openai",
    "OpenAISettings": "agentrt.models.openai",
    "SqliteSessionStore": "agentrt.sessions.sqlite",
}

__all__ = [
    "Agent",
    "AgentRun",
    "AgentSettings",
    "AgentrtError",
    "AnswerDoubt",
    "ApprovalRequestedEvent",
    "Approve",
    "AskEvent",
    "CapabilityMap",
    "ClassifiedEvent",
    "CoverageEvent",
    "Decision",
    "Event",
    "EventBase",
    "GuardEvent",
    "IntentEvent",
    "LocalModel",
    "MCPServer",
    "MCPServerError",
    "MemorySessionStore",
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
    "OutputDeltaEvent",
    "OutputInvalid",
    "PendingCall",
    "PipelineStep",
    "PlanAdaptedEvent",
    "PlanCreatedEvent",
    "PlanDecisionEvent",
    "PlanInvalidEvent",
    "PlanNode",
    "PlanWarningEvent",
    "PlannerFallbackEvent",
    "ReasoningChunk",
    "ReasoningDeltaEvent",
    "Reject",
    "RepairEvent",
    "RequestRejected",
    "RequirementsEvent",
    "RetriesExhausted",
    "RunFailed",
    "RunFinishedEvent",
    "RunRecord",
    "RunResult",
    "RunResumedEvent",
    "RunStartedEvent",
    "RunStatus",
    "Scope",
    "ScriptExhausted",
    "ScriptedModel",
    "ScriptedTurn",
    "Session",
    "SessionConflict",
    "SessionStore",
    "SessionTool",
    "SqliteSessionStore",
    "StoreUnavailable",
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
    "ToolConfidenceChunk",
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
    "Turn",
    "TurnStartedEvent",
    "Usage",
    "UsageChunk",
    "UserError",
    "VmInstructionEvent",
    "Workspace",
    "WorkspaceError",
    "__version__",
    "event_adapter",
    "open_store",
    "tool",
]


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        msg = f"module 'agentrt' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # asked once: later lookups find it without this hook
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
