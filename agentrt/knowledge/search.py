"""Searching a knowledge base: keyword (FTS5 BM25), semantic (FAISS), and hybrid (the two
fused by reciprocal rank), optionally reranked by a local cross-encoder; and the subgraph of
the knowledge graph around a query.

Hybrid fusion uses ranks, not scores: BM25 scores and cosine similarities live on scales that
cannot be compared, while "ranked 2nd by one method and 9th by the other" can. A chunk's fused
score is Σ 1 / (k + rank) over the methods that found it (k = 60, after Cormack et al., 2009).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentrt.contexts import CONTEXTS_FILE, KnowledgeConfig, load_knowledge_config
from agentrt.exceptions import ToolError, UserError
from agentrt.knowledge.store import ChunkRecord, ItemRecord, Store, Target, query_terms
from agentrt.logs import get_logger
from agentrt.sessions.store import Scope
from agentrt.vectors.embedder import Embedder, load_embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Hit", "KnowledgeBase", "Reranker", "SearchMethod", "fuse", "open_knowledge"]

SearchMethod = Literal["hybrid", "semantic", "keyword"]

RRF_K = 60

log = get_logger("agentrt.knowledge")

# Words that would match half the graph's entity names as substrings.
_GRAPH_STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "what",
        "how",
        "why",
        "when",
        "which",
        "who",
        "does",
        "are",
        "was",
        "were",
        "can",
        "could",
        "should",
        "would",
        "will",
        "from",
        "into",
        "that",
        "this",
        "these",
        "those",
        "there",
        "their",
        "about",
        "have",
        "has",
        "not",
        "you",
        "your",
        "use",
        "used",
        "using",
        "get",
        "set",
        "make",
    ]
)


@dataclass(frozen=True, slots=True)
class Hit:
    chunk: ChunkRecord
    score: float

    def record(self, *, text: bool = True) -> dict[str, Any]:
        """The hit as a tool returns it: cite it by `chunk`."""
        c = self.chunk
        record: dict[str, Any] = {
            "chunk": f"c{c.id}",
            "context": c.context,
            "item": c.item,
            "item_name": c.item_name,
            "page": c.page,
            "heading": c.heading,
            "score": round(self.score, 4),
        }
        if text:
            record["text"] = c.text
        return record


class Reranker(Protocol):
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Relevance of each text to the query; higher is better."""
        ...


class _CrossEncoder:
    def __init__(self, model: Any) -> None:
        self._model = model

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [float(s) for s in self._model.predict([(query, t) for t in texts])]


@functools.lru_cache(maxsize=2)
def _load_cross_encoder(name: str) -> Reranker | None:
    try:
        from sentence_transformers import CrossEncoder

        return _CrossEncoder(CrossEncoder(name, device="cpu", local_files_only=True))
    except Exception as exc:
        log.warning(
            "reranker not available locally; results stay in retrieval order",
            reranker=name,
            reason=str(exc),
        )
        return None


def fuse(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of ranked id lists (best first): ids by fused score, best first;
    ties keep the order in which the rankings first list them."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


class KnowledgeBase:
    """The contexts a workspace declares, over their store.

    :param config: the workspace's declaration (`contexts.yaml`)
    :param store: defaults to the store the declaration names
    :param embedder: defaults to `load_embedder(config.embedding_model)`, loaded on first use
        (a keyword search never loads it)
    :param reranker: defaults to the cross-encoder the declaration names, if it loads
    """

    def __init__(
        self,
        config: KnowledgeConfig,
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.config = config
        self.store = store or Store(config.store_path)
        self._embedder = embedder
        self._reranker = reranker

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = load_embedder(self.config.embedding_model)
        return self._embedder

    @property
    def reranker(self) -> Reranker | None:
        if self._reranker is None and self.config.reranker:
            self._reranker = _load_cross_encoder(self.config.reranker)
        return self._reranker

    def target(
        self, tool: str, contexts: Iterable[str] | None, scope: Scope | None
    ) -> dict[str, list[str] | None]:
        """What `tool` may read of `contexts` (None: of every context it may read).

        :raises ToolError: a context that is unknown, switched off for the tool, or outside
            the run's scope (the message says which contexts it may read)
        """
        declared = self.config.by_id
        readable = [
            c
            for c in declared
            if self.config.enabled(tool, c) and (scope is None or scope.allows(c))
        ]
        if contexts is None:
            names = readable
        else:
            names = list(dict.fromkeys(contexts))
            for name in names:
                if name in readable:
                    continue
                why = (
                    "there is no such context"
                    if name not in declared
                    else f"{tool} is not enabled for it"
                    if not self.config.enabled(tool, name)
                    else "it is outside this run's scope"
                )
                msg = f"cannot read context {name!r}: {why}. Readable: {', '.join(readable)}."
                raise ToolError(msg)
        ingested = self.store.contexts()
        missing = [n for n in names if n not in ingested]
        if missing:
            msg = (
                f"context(s) {', '.join(missing)} not ingested yet: run "
                f"`agentrt ingest --workspace {self.config.root}` first"
            )
            raise ToolError(msg)
        target: dict[str, list[str] | None] = {}
        for name in names:
            items = scope.contexts[name] if scope is not None else None
            target[name] = list(items) if items is not None else None
        return target

    def items_named(self, query: str, target: Target, limit: int) -> list[tuple[ItemRecord, int]]:
        """Items of `target` whose name or id holds words of `query`, with how many, the
        most first (then by name)."""
        terms = query_terms(query)
        scored = []
        for record in self.store.items(target):
            haystack = f"{record.name} {record.id}".lower()
            hits = sum(1 for t in terms if t in haystack)
            if hits:
                scored.append((record, hits))
        scored.sort(key=lambda pair: (-pair[1], pair[0].name))
        return scored[:limit]

    def restrict(self, target: Target, names: Sequence[str]) -> dict[str, list[str] | None]:
        """`target` narrowed to the items whose name or id contains one of `names` (any case).

        :raises ToolError: no item matches, naming what was looked for
        """
        wanted = [n.lower() for n in names if n.strip()]
        narrowed: dict[str, list[str] | None] = {}
        for record in self.store.items(target):
            haystack = f"{record.name} {record.id}".lower()
            if any(w in haystack for w in wanted):
                items = narrowed.setdefault(record.context, [])
                assert items is not None
                items.append(record.id)
        if not narrowed:
            msg = (
                f"no item of {', '.join(target)} has a name containing "
                f"{' or '.join(map(repr, names))}: search without item_names, or use "
                "search_items_by_name to see the names"
            )
            raise ToolError(msg)
        return narrowed

    # -- search -------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        target: Target,
        *,
        method: SearchMethod = "hybrid",
        limit: int = 10,
        query_vector: npt.NDArray[np.float32] | None = None,
    ) -> list[Hit]:
        """The best `limit` chunks of `target` for `query`, reranked when a reranker is set
        (blocking: tools run in worker threads).

        :param query_vector: the query's embedding, when the caller has it already (one batch
            for many queries is much faster than one call each); None embeds `query`
        """
        reranker = self.reranker
        depth = max(limit * 3, 30) if reranker is not None else limit
        if method == "keyword":
            ranked = self.store.keyword(query, target, depth)
        else:
            vector = self.embed_query(query) if query_vector is None else query_vector
            if method == "semantic":
                ranked = self.semantic(vector, target, depth)
            else:
                ranked = self.hybrid(query, vector, target, depth)
        hits = self._hits(ranked)
        if reranker is not None and hits:
            scores = reranker.score(query, [h.chunk.text for h in hits])
            hits = [
                Hit(h.chunk, s)
                for h, s in sorted(zip(hits, scores, strict=True), key=lambda p: -p[1])
            ]
        return hits[:limit]

    def hybrid(
        self, query: str, vector: npt.NDArray[np.float32], target: Target, limit: int
    ) -> list[tuple[int, float]]:
        """Keyword and semantic rankings fused by reciprocal rank, best first."""
        # Each method looks deeper than asked: a chunk ranked 40th by one and 3rd by the other
        # belongs near the top of the fusion.
        depth = max(limit * 5, 50)
        keyword = self.store.keyword(query, target, depth)
        semantic = self.semantic(vector, target, depth)
        return fuse([[i for i, _ in keyword], [i for i, _ in semantic]])[:limit]

    def embed_queries(self, queries: Sequence[str]) -> npt.NDArray[np.float32]:
        """The embeddings of `queries`, one row each, in one batch."""
        embedder = self.embedder
        return embedder.encode([embedder.query_instruction + q for q in queries])

    def embed_query(self, query: str) -> npt.NDArray[np.float32]:
        """The query's embedding, as a single row."""
        return self.embed_queries([query])

    def semantic(
        self, vector: npt.NDArray[np.float32], target: Target, limit: int
    ) -> list[tuple[int, float]]:
        """Nearest chunks of `target` to a query vector, across its contexts, best first."""
        import faiss
        import numpy as np

        embedder = self.embedder
        found: list[tuple[int, float]] = []
        for context, items in target.items():
            index = self.store.index(context, embedder.fingerprint, embedder.dimension)
            if index.ntotal == 0 or limit <= 0:
                continue
            params = None
            if items is not None:
                allowed = np.array(self.store.chunk_ids({context: items}), dtype="int64")
                if not len(allowed):
                    continue
                # Kept in a local: the parameters hold only a borrowed pointer to the selector.
                selector = faiss.IDSelectorBatch(allowed)
                params = faiss.SearchParameters()
                params.sel = selector
            scores, ids = index.search(
                vector.reshape(1, -1), min(limit, index.ntotal), params=params
            )
            found += [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]
        return sorted(found, key=lambda pair: -pair[1])[:limit]

    def _hits(self, ranked: list[tuple[int, float]]) -> list[Hit]:
        records = self.store.chunks(i for i, _ in ranked)
        return [Hit(records[i], s) for i, s in ranked if i in records]

    # -- the graph ------------------------------------------------------------------------------

    def subgraph(self, query: str, contexts: Sequence[str], limit: int = 30) -> dict[str, Any]:
        """Entities whose names hold the query's words, and the relations around them (one
        hop), the best supported first; each relation cites the chunks it was read from."""
        terms = [t for t in query_terms(query) if len(t) > 2 and t not in _GRAPH_STOPWORDS]
        seeds = self.store.entities_matching(terms, contexts, limit=8)
        relations = self.store.relations_of([s[0] for s in seeds], limit)
        entities: dict[str, dict[str, Any]] = {
            name.lower(): {"name": name, "kind": kind, "context": context, "mentions": n}
            for _, context, name, kind, _, n in seeds
        }
        edges = []
        for source, source_kind, relation, target, target_kind, support, chunks in relations:
            for name, kind in ((source, source_kind), (target, target_kind)):
                entities.setdefault(name.lower(), {"name": name, "kind": kind})
            edges.append(
                {
                    "source": source,
                    "relation": relation,
                    "target": target,
                    "support": support,
                    "chunks": [f"c{c}" for c in str(chunks).split(",")][:5],
                }
            )
        return {"entities": list(entities.values()), "relations": edges}


@functools.lru_cache(maxsize=8)
def open_knowledge(root: str) -> KnowledgeBase:
    """The knowledge base of the workspace at `root`, opened once per process.

    :raises UserError: the workspace declares no contexts
    """
    config = load_knowledge_config(Path(root))
    if config is None:
        msg = f"workspace {root} declares no contexts: add a {CONTEXTS_FILE}"
        raise UserError(msg)
    return KnowledgeBase(config)
