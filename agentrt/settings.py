"""Settings of an agent, with the defaults a production backend can start from."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentSettings", "ToolFormat", "cache_dir"]


ToolFormat = Literal[
    "hermes",
    "qwen3_coder",
    "llama",
    "mistral",
    "pythonic",
    "json",
    "deepseek",
    "glm4",
    "kimi_k2",
    "minimax",
    "harmony",
]
"""A format of tool calls: `hermes` is `<tool_call>{json}</tool_call>` (Qwen2.5, Qwen3),
`qwen3_coder` its XML body (`<function=NAME><parameter=K>`), `llama` Llama 3.x JSON with
`parameters`, `mistral` `[TOOL_CALLS]`, `pythonic` `[f(a=1)]` (Llama 3.2/4, LFM2, OLMo), `json` a
bare JSON object, and the vendor formats of DeepSeek, GLM-4, Kimi K2, MiniMax and gpt-oss."""


class AgentSettings(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    tool_timeout: float = Field(30.0, gt=0)
    """Seconds a tool call may take before it is abandoned (a tool's own `timeout` wins)."""
    max_concurrency: int = Field(8, ge=1)
    """Tool calls of one run that may execute at once; the rest wait their turn."""
    max_observation_chars: int = Field(8000, ge=100)
    """A tool result longer than this is cut before the model sees it (events keep it whole)."""
    max_turn_observation_chars: int = Field(16000, ge=100)
    """All the results of one `react` turn together: past it, the longest are cut further, to
    equal shares (events keep them whole), so that a turn of many calls cannot fill the
    context of a small model (the embedded ones read 8,192 tokens, about 32,000 characters)."""
    trajectory_dir: Path | None = Path("trajectories")
    """Where runs are recorded, as `<dir>/<yyyy-mm-dd>/<run_id>.jsonl`; None records nothing."""
    default_strategy: str = "exploratory"
    """The strategy used when classification fails."""
    token_budget: int | None = Field(None, gt=0)
    """Most tokens (prompt and completion, all model calls) a run may use. It binds before each
    step and while an answer streams: an answer that would pass it is cut there (its tokens
    estimated as they arrive, see `agentrt.run`) and the run ends `budget_exhausted`."""
    max_turn_tokens: int | None = Field(4096, gt=0)
    """Most tokens one model answer may stream (estimated as they arrive); an answer that goes
    on past it is cut there and the run ends `budget_exhausted`, so a model that never stops
    writing cannot hold a run. None: no cap (the model's own `max_tokens` still applies)."""
    constrain_tools: Literal["auto", "on", "off"] = "auto"
    """Whether a `react` turn of a model that can (the embedded model) is constrained by a
    grammar to text or valid calls of the offered tools; `auto` is on for the embedded model
    (see `agentrt.models.grammar`)."""
    turn_retries: int = Field(1, ge=0)
    """How often a turn whose stream broke off mid-answer is asked again."""
    session_store: str | Path | None = None
    """Where sessions (their turns: messages with tool calls and results, session tools; their
    named results) and runs are kept, so that another agent or process over the same store
    continues them: `sqlite:///file` (or a path: a SQLite file), `postgresql://…` (the
    `postgres` extra), `memory:`. None keeps sessions in memory and records no runs."""
    history_tokens: int = Field(2000, ge=50)
    """Most tokens (estimated) of a session's earlier turns shown to a run: the latest turns
    whole, the older ones summarised (see `agentrt.sessions.history`)."""
    embedding_model: str | None = None
    """The model tool retrieval embeds with: a local path, or a hub name found in the local
    Hugging Face cache (nothing is downloaded). None: all-MiniLM-L6-v2, from its package."""
    tool_format: Literal["auto"] | ToolFormat = "auto"
    """The tool-call format the prompt asks a model that writes calls as text for
    (`agentrt.models.formats`); `auto`: its family's own, known from a local model's chat
    template or a server model's name. Calls in every format are read whatever this says."""
    cache_dir: Path | None = None
    """Where the tool index and joined model weights are cached; None: $AGENTRT_CACHE_DIR,
    else ~/.cache/agentrt."""


def cache_dir() -> Path:
    """`$AGENTRT_CACHE_DIR`, else `$XDG_CACHE_HOME/agentrt`, else `~/.cache/agentrt`: where
    `AgentSettings.cache_dir` points when it is None."""
    if explicit := os.environ.get("AGENTRT_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "agentrt"
