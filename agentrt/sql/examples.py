"""The example selector: annotated question → SQL (or plan) examples, the nearest few to the
dialogue added to the prompt.

Examples are data in a workspace (`examples/*.yaml`, each a list of `Example`). Their questions
are embedded once and kept on disk (`agentrt.vectors.cache`), under
`<cache>/examples/<embedder>/vectors.npz`; editing one example embeds only that one again. At
query time the question and the earlier turns of the dialogue are embedded, and each example
scores its best similarity to any of them, an earlier turn counting `CONTEXT_WEIGHT` as much.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentrt._validation import load_yaml, load_yaml_model
from agentrt.exceptions import WorkspaceError
from agentrt.vectors.cache import embed_cached
from agentrt.vectors.embedder import Embedder

if TYPE_CHECKING:
    from agentrt.sql.guard import SqlGuard

__all__ = ["CONTEXT_WEIGHT", "Example", "ExampleSelector", "fitting", "load_examples"]

CONTEXT_WEIGHT = 0.8
"""How much an earlier turn of the dialogue counts against the current question."""


class Example(BaseModel):
    """A question and how it was answered: the SQL, a plan in words, or both."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str = Field(min_length=1)
    sql: str | None = None
    plan: str | None = None
    """The steps, in words (query, then chart, …), when the answer is more than one query."""

    @model_validator(mode="after")
    def _answered(self) -> Example:
        if not self.sql and not self.plan:
            msg = "an example needs `sql`, `plan` or both"
            raise ValueError(msg)
        return self

    def render(self) -> str:
        """The example as a prompt shows it."""
        lines = [f"Question: {self.question}"]
        if self.plan:
            lines.append(f"Plan: {self.plan}")
        if self.sql:
            lines.append(f"SQL: {self.sql}")
        return "\n".join(lines)


def load_examples(folder: Path) -> list[Example]:
    """Every example in `folder/*.yaml`; a bad file raises `WorkspaceError` naming it."""
    examples: list[Example] = []
    for path in sorted(folder.glob("*.yaml")):
        entries = load_yaml(path)
        if not isinstance(entries, list):
            msg = f"{path}: expected a list of examples, got {type(entries).__name__}"
            raise WorkspaceError(msg)
        examples += (
            load_yaml_model(path, Example, data=entry, where=f"entry {i}")
            for i, entry in enumerate(entries)
        )
    return examples


def fitting(examples: Sequence[Example], guard: SqlGuard) -> list[Example]:
    """The examples whose SQL would run on the guard's database (those with a plan alone, too).
    A workspace's examples are written for one database: shown for another, the 1.5B copied
    their tables (`JOIN sales s` in a database with no `sales`) into every query it wrote."""
    return [e for e in examples if e.sql is None or guard.prepares(e.sql)]


class ExampleSelector:
    """The examples nearest to a dialogue. Build it with `build`."""

    def __init__(self, examples: list[Example], index: Any, embedder: Embedder) -> None:
        self.examples = examples
        self._index = index
        self.embedder = embedder
        self.embedded = 0
        """How many example questions the build had to embed (0 when all were cached)."""

    @classmethod
    def build(
        cls, examples: Sequence[Example], embedder: Embedder, cache: Path | None
    ) -> ExampleSelector:
        """Embed the examples' questions (reusing those cached under `cache`); blocking."""
        import faiss

        store = cache / "examples" / embedder.fingerprint / "vectors.npz" if cache else None
        vectors, embedded = embed_cached([e.question for e in examples], embedder, store)
        index = faiss.IndexFlatIP(embedder.dimension)
        if len(examples):
            index.add(vectors)
        built = cls(list(examples), index, embedder)
        built.embedded = embedded
        return built

    def select(self, question: str, k: int, *, context: Sequence[str] = ()) -> list[Example]:
        """The `k` examples nearest to `question` and the earlier turns (`context`, most
        recent first), best first. Blocking (it embeds); `aselect` runs it in a thread."""
        if not self.examples or k <= 0:
            return []
        texts = [question, *context]
        weights = [1.0] + [CONTEXT_WEIGHT] * len(context)
        vectors = self.embedder.encode([self.embedder.query_instruction + t for t in texts])
        scores, rows = self._index.search(vectors, min(k, len(self.examples)))
        best: dict[int, float] = {}
        for weight, score_row, index_row in zip(weights, scores, rows, strict=True):
            for score, row in zip(score_row, index_row, strict=True):
                if row >= 0:
                    best[int(row)] = max(best.get(int(row), -1.0), weight * float(score))
        ranked = sorted(best, key=lambda row: -best[row])[:k]
        return [self.examples[row] for row in ranked]

    async def aselect(self, question: str, k: int, *, context: Sequence[str] = ()) -> list[Example]:
        """`select` in a worker thread."""
        return await anyio.to_thread.run_sync(lambda: self.select(question, k, context=context))
