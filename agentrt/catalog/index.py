"""Internal. Tool retrieval: a FAISS index over the tools' metadata, and the narrowing rule.

Each tool's compact metadata document (`ToolMetadata.document`) is embedded once; the index is
an inner-product FAISS index over the normalised vectors (cosine similarity). At query time
only the queries are embedded.

On disk, under `<cache>/tool_index/<embedder>/`:

    vectors.npz              the vector of every current document (see `agentrt.vectors.cache`)
    <registry>.faiss/.json   the built index of one registry version, and its tool names

A registry seen before loads its index without embedding anything; a changed registry embeds
only the documents that changed, and reuses the other vectors.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from agentrt.catalog.metadata import Registry
from agentrt.events import NarrowedTool
from agentrt.logs import get_logger
from agentrt.vectors.cache import embed_cached, write_atomic
from agentrt.vectors.embedder import Embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["ToolIndex", "narrow"]

log = get_logger("agentrt.catalog.index")


class ToolIndex:
    """Nearest tools to a query, by the similarity of their metadata documents."""

    def __init__(self, names: list[str], index: Any, embedder: Embedder) -> None:
        self.names = names
        self._index = index
        self.embedder = embedder
        self.embedded = 0
        """How many documents the last build had to embed (0 when all came from the cache)."""

    @classmethod
    def build(cls, registry: Registry, embedder: Embedder, cache: Path | None) -> ToolIndex:
        """Build, or load from `cache`, the index of `registry` (blocking; see `abuild`)."""
        import faiss

        names = sorted(registry.tools)
        folder = cache / "tool_index" / embedder.fingerprint if cache is not None else None
        if folder is not None:
            stored = folder / f"{registry.fingerprint}.faiss"
            if stored.is_file():
                index = faiss.read_index(str(stored))
                cached_names = json.loads(stored.with_suffix(".json").read_text())
                if cached_names == names and index.d == embedder.dimension:
                    return cls(names, index, embedder)

        documents = [registry.tools[n].document() for n in names]
        store = folder / "vectors.npz" if folder is not None else None
        vectors, embedded = embed_cached(documents, embedder, store)
        index = faiss.IndexFlatIP(embedder.dimension)
        if len(names):
            index.add(vectors)
        built = cls(names, index, embedder)
        built.embedded = embedded
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(stored, lambda f: f.write(faiss.serialize_index(index).tobytes()))
            write_atomic(stored.with_suffix(".json"), lambda f: f.write(json.dumps(names).encode()))
        log.info("tool index built", tools=len(names), embedded=embedded)
        return built

    @classmethod
    async def abuild(cls, registry: Registry, embedder: Embedder, cache: Path | None) -> ToolIndex:
        """`build` in a worker thread."""
        return await anyio.to_thread.run_sync(cls.build, registry, embedder, cache)

    def search(self, queries: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """The best `k` tools for any of the query vectors (one per row): each tool with its
        best score, best first."""
        if not self.names or k <= 0:
            return []
        scores, rows = self._index.search(queries.reshape(-1, self.embedder.dimension), k)
        best: dict[str, float] = {}
        for score_row, index_row in zip(scores, rows, strict=True):
            for score, i in zip(score_row, index_row, strict=True):
                if i >= 0:
                    name = self.names[i]
                    best[name] = max(best.get(name, -1.0), float(score))
        return sorted(best.items(), key=lambda item: -item[1])[:k]

    async def query(self, texts: Sequence[str], k: int) -> list[tuple[str, float]]:
        """Embed `texts` as queries (in one batch, in a worker thread) and `search`."""
        instruction = self.embedder.query_instruction
        vectors = await self.embedder.aencode([instruction + t for t in texts])
        return self.search(vectors, k)


def narrow(
    *,
    template: Iterable[str],
    retrieved: Sequence[tuple[str, float]],
    safety: Iterable[str],
    cap: int,
) -> list[NarrowedTool]:
    """The tools offered to the model: template ∪ retrieved ∪ safety, within `cap`.

    Template tools are always offered. Retrieved tools (best first) fill the rest up to the
    cap. Safety tools are added when missing, even past the cap by up to two; past that,
    retrieved tools go, the lowest-scoring first. Template and safety tools are never dropped.
    """
    scores = dict(retrieved)
    chosen = {n: NarrowedTool(name=n, source="template", score=scores.get(n)) for n in template}
    extra_safety = [n for n in dict.fromkeys(safety) if n not in chosen]
    picked = [(n, s) for n, s in retrieved if n not in chosen and n not in extra_safety]
    picked = picked[: max(0, cap - len(chosen))]
    while picked and len(chosen) + len(picked) + len(extra_safety) > cap + 2:
        picked.pop()  # the lowest score: `retrieved` is best first
    chosen |= {n: NarrowedTool(name=n, source="retrieved", score=s) for n, s in picked}
    chosen |= {n: NarrowedTool(name=n, source="safety", score=scores.get(n)) for n in extra_safety}
    return list(chosen.values())
