"""Internal. Tool retrieval: hybrid (dense FAISS + lexical FTS5 BM25) search over the tools'
metadata, and the narrowing rule.

Each tool's compact metadata document (`ToolMetadata.document`) is embedded once; the dense
index is an inner-product FAISS index over the normalised vectors (cosine similarity). The same
documents are indexed for BM25 in memory (`agentrt.catalog.lexical`). At query time only the
queries are embedded; `agentrt.catalog.fusion` says how the two rankings become one, how a
request for several things is split, and how the fit signal is computed.

Near-duplicate tools (the same name once case and separators are ignored, or the same metadata
under two names, as two MCP servers offering one tool give) are one entry of the ranking: the
best-ranked stands for them and the others are reported as its `duplicates`, never offered
beside it. Vendor variants (`send_email_gmail`, `send_email_outlook`) are different tools.

On disk, under `<cache>/tool_index/<embedder>/`:

    vectors.npz              the vector of every current document (see `agentrt.vectors.cache`)
    <registry>.faiss/.json   the built index of one registry version, and its tool names

A registry seen before loads its index without embedding anything; a changed registry embeds
only the documents that changed, and reuses the other vectors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from agentrt.catalog.fusion import fit, fuse, round_robin, split_intents
from agentrt.catalog.lexical import LexicalIndex
from agentrt.catalog.metadata import Registry
from agentrt.events import NarrowedTool
from agentrt.logs import get_logger
from agentrt.vectors.cache import embed_cached, write_atomic
from agentrt.vectors.embedder import Embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Retrieval", "ToolIndex", "narrow"]

log = get_logger("agentrt.catalog.index")

DEPTH = 50
"""Candidates each ranker gives the fusion, per query part."""


@dataclass(frozen=True)
class Retrieval:
    """What retrieval found for a query."""

    tools: list[tuple[str, float]] = field(default_factory=list)
    """The best tools with their fused scores, best first; one entry per near-duplicate group."""
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    """Tool in `tools` → the near-duplicates it stands for (not offered)."""
    fit: float | None = None
    """How sure retrieval is that some tool serves the query (see `fusion.fit`); None when
    nothing was searched."""


class ToolIndex:
    """Nearest tools to a query, by the similarity of their metadata documents and by BM25."""

    def __init__(
        self, names: list[str], index: Any, embedder: Embedder, registry: Registry
    ) -> None:
        self.names = names
        self._index = index
        self.embedder = embedder
        self.embedded = 0
        """How many documents the last build had to embed (0 when all came from the cache)."""
        self.lexical = LexicalIndex(names, [registry.tools[n].document() for n in names])
        self._group = _duplicate_groups(names, registry)
        self._members: dict[int, list[str]] = {}
        for row, group in enumerate(self._group):
            self._members.setdefault(group, []).append(names[row])

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
                    return cls(names, index, embedder, registry)

        documents = [registry.tools[n].document() for n in names]
        store = folder / "vectors.npz" if folder is not None else None
        vectors, embedded = embed_cached(documents, embedder, store)
        index = faiss.IndexFlatIP(embedder.dimension)
        if len(names):
            index.add(vectors)
        built = cls(names, index, embedder, registry)
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
        """Dense only: the best `k` tools for any of the query vectors (one per row), each with
        its best cosine similarity, best first."""
        if not self.names or k <= 0:
            return []
        best: dict[str, float] = {}
        for ranking in self._dense(queries, k):
            for row, score in ranking:
                name = self.names[row]
                best[name] = max(best.get(name, -1.0), score)
        return sorted(best.items(), key=lambda item: -item[1])[:k]

    def lexical_search(self, text: str, k: int) -> list[tuple[str, float]]:
        """Lexical only: the best `k` tools for `text` by BM25, best first."""
        return [(self.names[row], score) for row, score in self.lexical.search(text, k).ranked]

    def parts(self, texts: Sequence[str]) -> list[str]:
        """What retrieves for `texts`: each text's clauses, then the text (`split_intents`)."""
        return list(dict.fromkeys(p for t in texts for p in split_intents(t)))

    def rank(self, parts: Sequence[str], vectors: npt.NDArray[np.float32], k: int) -> Retrieval:
        """Hybrid retrieval for `parts` (see `parts`) given their vectors, one row each: each
        part fuses its dense and lexical rankings, the parts are merged round-robin, and
        near-duplicates collapse into the best of them."""
        if not self.names or k <= 0 or not parts:
            return Retrieval()
        rankings = []
        denses = self._dense(vectors.reshape(-1, self.embedder.dimension), DEPTH)
        for part, dense in zip(parts, denses, strict=True):
            lexical = self.lexical.search(part, DEPTH)
            rankings.append(fuse(dense, lexical.ranked, lexical.coverage))
        # The fit is the whole query's (the last part): a clause alone ("plot it") fits
        # something more easily than the request it is part of.
        whole, dense = parts[-1], denses[-1]
        fitness = fit(dense[0][1], self.lexical.term_share(whole, dense[0][0])) if dense else 0.0
        return self._collapse(round_robin(rankings), k, fitness)

    async def query(self, texts: Sequence[str], k: int) -> Retrieval:
        """Embed the parts of `texts` as queries (in one batch, in a worker thread) and `rank`."""
        instruction = self.embedder.query_instruction
        parts = self.parts(texts)
        if not parts:
            return Retrieval()
        vectors = await self.embedder.aencode([instruction + p for p in parts])
        return self.rank(parts, vectors, k)

    def _dense(self, vectors: npt.NDArray[np.float32], k: int) -> list[list[tuple[int, float]]]:
        scores, rows = self._index.search(vectors.reshape(-1, self.embedder.dimension), k)
        return [
            [(int(i), float(s)) for s, i in zip(score_row, index_row, strict=True) if i >= 0]
            for score_row, index_row in zip(scores, rows, strict=True)
        ]

    def _collapse(self, merged: list[tuple[int, float]], k: int, fitness: float) -> Retrieval:
        """The first `k` entries of `merged`, one per near-duplicate group, with the others of
        each kept group reported."""
        kept: dict[int, tuple[int, float]] = {}
        for row, score in merged:
            kept.setdefault(self._group[row], (row, score))
            if len(kept) == k:
                break
        members = self._members
        tools = [(self.names[row], score) for row, score in kept.values()]
        duplicates = {
            self.names[row]: [n for n in members[group] if n != self.names[row]]
            for group, (row, _) in kept.items()
            if len(members[group]) > 1
        }
        return Retrieval(tools, duplicates, fitness)


def _duplicate_groups(names: Sequence[str], registry: Registry) -> list[int]:
    """Each row's near-duplicate group (the row of its first member): same name once case and
    separators are ignored, or the same metadata under another name."""
    first: dict[str, int] = {}
    groups = []
    for row, name in enumerate(names):
        keys = (
            "name:" + re.sub(r"[\W_]+", "", name).lower(),
            "doc:" + registry.tools[name].model_copy(update={"name": ""}).document(),
        )
        group = next((first[key] for key in keys if key in first), row)
        for key in keys:
            first.setdefault(key, group)
        groups.append(group)
    return groups


def narrow(
    *,
    template: Iterable[str],
    retrieved: Sequence[tuple[str, float]],
    safety: Iterable[str],
    cap: int,
    duplicates: Mapping[str, list[str]] | None = None,
) -> list[NarrowedTool]:
    """The tools offered to the model: template ∪ retrieved ∪ safety, within `cap`.

    Template tools are always offered. Retrieved tools (best first) fill the rest up to the
    cap. Safety tools are added when missing, even past the cap by up to two; past that,
    retrieved tools go, the lowest-scoring first. Template and safety tools are never dropped.
    A retrieved tool carries the near-duplicates it stands for (`duplicates`); one standing for
    a template or safety tool is not offered.
    """
    scores = dict(retrieved)
    chosen = {n: NarrowedTool(name=n, source="template", score=scores.get(n)) for n in template}
    extra_safety = [n for n in dict.fromkeys(safety) if n not in chosen]
    stands_for = duplicates or {}
    # A retrieved tool standing for a template or safety tool would offer that tool twice.
    fixed = chosen.keys() | set(extra_safety)
    picked = [
        (n, s)
        for n, s in retrieved
        if n not in fixed and not fixed.intersection(stands_for.get(n, []))
    ]
    picked = picked[: max(0, cap - len(chosen))]
    while picked and len(chosen) + len(picked) + len(extra_safety) > cap + 2:
        picked.pop()  # the lowest score: `retrieved` is best first
    chosen |= {
        n: NarrowedTool(name=n, source="retrieved", score=s, duplicates=stands_for.get(n, []))
        for n, s in picked
    }
    chosen |= {n: NarrowedTool(name=n, source="safety", score=scores.get(n)) for n in extra_safety}
    return list(chosen.values())
