"""Contexts (knowledge bases) as a workspace declares them, in `contexts.yaml` at its root:

    store: .knowledge                 # where `agentrt ingest` writes, relative to the workspace
    contexts:
      - id: manuals                   # what tools and the classifier call it
        name: Product manuals
        description: Installation and operation of every product we sell.
        sources: [docs/manuals, faq.md]   # folders (read recursively) or files
    tools:                            # per tool, the contexts it may not search (default: all on)
      wiki_search: {manuals: false}
    reranker: null                    # a local cross-encoder (a path, or a name in the HF cache)
    embedding_model: null             # like AgentSettings.embedding_model

Sources may be Markdown, plain text, HTML or PDF files; other files in a source folder are
skipped. Relative paths are read from the workspace folder.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentrt._validation import load_yaml, load_yaml_model
from agentrt.exceptions import WorkspaceError

__all__ = ["CONTEXTS_FILE", "ContextSpec", "KnowledgeConfig", "load_knowledge_config"]

CONTEXTS_FILE = "contexts.yaml"


class ContextSpec(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    """Lower-case, short: tools take it as an argument, and scopes write `<id>/<item>`."""
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    """What is in it, in the words a question would use; the classifier and the model read it."""
    sources: list[str] = Field(min_length=1)
    """Folders (read recursively) and files, relative to the workspace or absolute."""


class KnowledgeConfig(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    root: Path
    """The workspace folder; relative paths below are read from it."""
    store: str = ".knowledge"
    contexts: list[ContextSpec] = Field(min_length=1)
    tools: dict[str, dict[str, bool]] = {}
    """Tool name → context id → whether that tool may read it; unlisted means yes."""
    reranker: str | None = None
    """A cross-encoder found locally; None leaves results in retrieval order."""
    embedding_model: str | None = None
    chunk_chars: int = Field(1200, ge=200, le=20000)
    """The longest chunk, in characters; sections longer than this are split at paragraphs."""

    @model_validator(mode="after")
    def _consistent(self) -> KnowledgeConfig:
        ids = [c.id for c in self.contexts]
        doubled = sorted({i for i in ids if ids.count(i) > 1})
        if doubled:
            msg = f"context ids must be unique; repeated: {', '.join(doubled)}"
            raise ValueError(msg)
        for tool, switches in self.tools.items():
            unknown = sorted(set(switches) - set(ids))
            if unknown:
                msg = (
                    f"tools.{tool} names unknown context(s) {', '.join(unknown)} "
                    f"(declared: {', '.join(ids)})"
                )
                raise ValueError(msg)
        return self

    @property
    def by_id(self) -> dict[str, ContextSpec]:
        return {c.id: c for c in self.contexts}

    @property
    def store_path(self) -> Path:
        return (self.root / self.store).resolve()

    def source_paths(self, context: ContextSpec) -> list[Path]:
        return [(self.root / s).resolve() for s in context.sources]

    def enabled(self, tool: str, context: str) -> bool:
        """Whether `tool` may read `context` under this configuration."""
        return self.tools.get(tool, {}).get(context, True)


def load_knowledge_config(root: Path) -> KnowledgeConfig | None:
    """The workspace's declaration, or None when it has no `contexts.yaml`.

    :raises WorkspaceError: the file is unreadable or invalid (the message names the field)
    """
    path = root / CONTEXTS_FILE
    if not path.is_file():
        return None
    data = load_yaml(path)
    if not isinstance(data, dict):
        msg = f"{path}: expected a mapping with a 'contexts' list, got {type(data).__name__}"
        raise WorkspaceError(msg)
    return load_yaml_model(path, KnowledgeConfig, data={**data, "root": root.resolve()})
