"""Where ingested knowledge lives: SQLite for items, chunks, keywords and the graph; FAISS for
chunk vectors.

    <store>/knowledge.sqlite3
        contexts    id, name, description
        items       (context, id) → name, kind, path, content hash, pages
        chunks      id → context, item, seq, page, heading, text, text hash
        chunks_fts  FTS5 (porter stemming) over item name, heading and text; rowid = chunk id
        vectors     (embedder, text hash) → float32 vector: a chunk whose text did not change
                    is never embedded again, whatever else changed in its item
        entities, mentions, relations   the graph (see `agentrt.knowledge.graph`)
        meta        generation:<context>, bumped by every change to the context
    <store>/<context>.faiss, <context>.json
        one inner-product index per context over its chunk ids; the JSON says which
        generation and embedder it was built for, and a stale one is rebuilt from `vectors`
        (no embedding needed)

One connection serves all threads, under a lock: reads take microseconds, and ingest is one
writer at a time anyway.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrt.contexts import ContextSpec
from agentrt.knowledge.documents import Document
from agentrt.knowledge.graph import extract
from agentrt.vectors.cache import write_atomic

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["ChunkRecord", "ItemRecord", "Store", "Target"]

Target = Mapping[str, Sequence[str] | None]
"""What a search may read: context id → its item ids, or None for the whole context."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS contexts(id TEXT PRIMARY KEY, name TEXT NOT NULL,
    description TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items(
    context TEXT NOT NULL REFERENCES contexts(id) ON DELETE CASCADE,
    id TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, path TEXT NOT NULL,
    hash TEXT NOT NULL, pages INTEGER NOT NULL,
    PRIMARY KEY (context, id));
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY, context TEXT NOT NULL, item TEXT NOT NULL,
    seq INTEGER NOT NULL, page INTEGER NOT NULL, heading TEXT NOT NULL, text TEXT NOT NULL,
    hash TEXT NOT NULL,
    FOREIGN KEY (context, item) REFERENCES items(context, id) ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS chunks_by_item ON chunks(context, item, seq);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    name, heading, text, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS vectors(embedder TEXT NOT NULL, hash TEXT NOT NULL,
    vector BLOB NOT NULL, PRIMARY KEY (embedder, hash));
CREATE TABLE IF NOT EXISTS entities(id INTEGER PRIMARY KEY, context TEXT NOT NULL,
    key TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, UNIQUE (context, key));
CREATE TABLE IF NOT EXISTS mentions(
    entity INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    chunk INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    PRIMARY KEY (entity, chunk));
CREATE TABLE IF NOT EXISTS relations(
    source INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    relation TEXT NOT NULL,
    target INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    chunk INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS relations_by_source ON relations(source);
CREATE INDEX IF NOT EXISTS relations_by_target ON relations(target);
"""

_TERM = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class ItemRecord:
    context: str
    id: str
    """Its path inside the context's source (a file source: its file name)."""
    name: str
    kind: str
    pages: int
    chunks: int


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    id: int
    context: str
    item: str
    item_name: str
    seq: int
    page: int
    heading: str
    text: str


class Store:
    """The store in folder `path` (created when missing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(
            path / "knowledge.sqlite3", check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.RLock()
        self._indexes: dict[str, tuple[int, str, Any]] = {}
        """Context → (generation, embedder, loaded FAISS index)."""

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    # -- writing (ingest) --------------------------------------------------------------------

    def sync_contexts(self, specs: Iterable[ContextSpec]) -> list[str]:
        """Record the declared contexts; drop stored ones no longer declared (returned)."""
        specs = list(specs)
        with self._transaction() as db:
            for c in specs:
                db.execute(
                    "INSERT INTO contexts VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                    "name = excluded.name, description = excluded.description",
                    (c.id, c.name, c.description),
                )
            declared = {c.id for c in specs}
            gone = [r[0] for r in db.execute("SELECT id FROM contexts") if r[0] not in declared]
            for context in gone:
                self._delete_chunks(db, "context = ?", (context,))
                db.execute("DELETE FROM contexts WHERE id = ?", (context,))
        for context in gone:
            (self.path / f"{context}.faiss").unlink(missing_ok=True)
            (self.path / f"{context}.json").unlink(missing_ok=True)
        return gone

    def item_hashes(self, context: str) -> dict[str, str]:
        rows = self._rows("SELECT id, hash FROM items WHERE context = ?", (context,))
        return {str(item): str(content_hash) for item, content_hash in rows}

    def replace_item(
        self, context: str, item: str, path: str, content_hash: str, doc: Document
    ) -> None:
        """Store `doc` as `item`, replacing what was stored for it, graph included."""
        with self._transaction() as db:
            self._delete_chunks(db, "context = ? AND item = ?", (context, item))
            db.execute("DELETE FROM items WHERE context = ? AND id = ?", (context, item))
            db.execute(
                "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?)",
                (context, item, doc.name, doc.kind, path, content_hash, doc.pages),
            )
            for seq, chunk in enumerate(doc.chunks):
                cursor = db.execute(
                    "INSERT INTO chunks(context, item, seq, page, heading, text, hash) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        context,
                        item,
                        seq,
                        chunk.page,
                        chunk.heading,
                        chunk.text,
                        text_hash(embedding_text(doc.name, chunk.heading, chunk.text)),
                    ),
                )
                chunk_id = cursor.lastrowid
                db.execute(
                    "INSERT INTO chunks_fts(rowid, name, heading, text) VALUES (?, ?, ?, ?)",
                    (chunk_id, doc.name, chunk.heading, chunk.text),
                )
                self._add_graph(db, context, chunk_id, chunk.heading, chunk.text)
            self._bump(db, context)

    def remove_item(self, context: str, item: str) -> None:
        with self._transaction() as db:
            self._delete_chunks(db, "context = ? AND item = ?", (context, item))
            db.execute("DELETE FROM items WHERE context = ? AND id = ?", (context, item))
            self._bump(db, context)

    @staticmethod
    def _delete_chunks(db: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> None:
        db.execute(
            f"DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE {where})", params
        )
        db.execute(f"DELETE FROM chunks WHERE {where}", params)
        # Entities no chunk mentions any more go too (their relations cascade).
        db.execute("DELETE FROM entities WHERE id NOT IN (SELECT entity FROM mentions)")

    @staticmethod
    def _bump(db: sqlite3.Connection, context: str) -> None:
        db.execute(
            "INSERT INTO meta VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET "
            "value = CAST(value AS INTEGER) + 1",
            (f"generation:{context}",),
        )

    @staticmethod
    def _add_graph(
        db: sqlite3.Connection, context: str, chunk: int | None, heading: str, text: str
    ) -> None:
        entities, relations = extract(heading, text)
        ids: dict[str, int] = {}
        for e in entities:
            db.execute(
                "INSERT INTO entities(context, key, name, kind) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(context, key) DO NOTHING",
                (context, e.key, e.name, e.kind),
            )
            (ids[e.key],) = db.execute(
                "SELECT id FROM entities WHERE context = ? AND key = ?", (context, e.key)
            ).fetchone()
            db.execute("INSERT OR IGNORE INTO mentions VALUES (?, ?)", (ids[e.key], chunk))
        db.executemany(
            "INSERT INTO relations VALUES (?, ?, ?, ?)",
            [(ids[r.source.key], r.relation, ids[r.target.key], chunk) for r in relations],
        )

    def missing_vectors(self, embedder: str) -> list[tuple[str, str]]:
        """(text hash, text to embed) of every chunk without a vector from `embedder`."""
        rows = self._rows(
            "SELECT DISTINCT c.hash, i.name, c.heading, c.text FROM chunks c "
            "JOIN items i ON i.context = c.context AND i.id = c.item "
            "WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.embedder = ? AND v.hash = c.hash)",
            (embedder,),
        )
        return [(h, embedding_text(name, heading, text)) for h, name, heading, text in rows]

    def put_vectors(
        self, embedder: str, hashes: Sequence[str], vectors: npt.NDArray[np.float32]
    ) -> None:
        with self._transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(embedder, h, v.tobytes()) for h, v in zip(hashes, vectors, strict=True)],
            )

    def prune_vectors(self) -> int:
        """Forget vectors no chunk has any more; the number forgotten."""
        with self._transaction() as db:
            return db.execute(
                "DELETE FROM vectors WHERE hash NOT IN (SELECT hash FROM chunks)"
            ).rowcount

    # -- reading -----------------------------------------------------------------------------

    def generation(self, context: str) -> int:
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (f"generation:{context}",))
        return int(rows[0][0]) if rows else 0

    def contexts(self) -> list[str]:
        return [r[0] for r in self._rows("SELECT id FROM contexts ORDER BY id")]

    def index(self, context: str, embedder: str, dimension: int) -> Any:
        """The FAISS index of `context`'s chunks (ids = chunk ids), current with the store."""
        import faiss

        generation = self.generation(context)
        with self._lock:
            cached = self._indexes.get(context)
            if cached is not None and cached[:2] == (generation, embedder):
                return cached[2]
            stored, sidecar = self.path / f"{context}.faiss", self.path / f"{context}.json"
            index = None
            if stored.is_file() and sidecar.is_file():
                built_for = json.loads(sidecar.read_text())
                if built_for == {"generation": generation, "embedder": embedder}:
                    index = faiss.read_index(str(stored))
            if index is None:
                index = self._build_index(context, embedder, dimension)
                write_atomic(stored, lambda f: f.write(faiss.serialize_index(index).tobytes()))
                built = json.dumps({"generation": generation, "embedder": embedder})
                write_atomic(sidecar, lambda f: f.write(built.encode()))
            self._indexes[context] = (generation, embedder, index)
            return index

    def _build_index(self, context: str, embedder: str, dimension: int) -> Any:
        import faiss
        import numpy as np

        rows = self._rows(
            "SELECT c.id, v.vector FROM chunks c JOIN vectors v "
            "ON v.hash = c.hash AND v.embedder = ? WHERE c.context = ?",
            (embedder, context),
        )
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        if rows:
            ids = np.array([r[0] for r in rows], dtype="int64")
            vectors = np.vstack([np.frombuffer(r[1], dtype="float32") for r in rows])
            index.add_with_ids(vectors, ids)
        return index

    def keyword(self, query: str, target: Target, limit: int) -> list[tuple[int, float]]:
        """Chunks matching any term of `query`, by BM25 (higher is better)."""
        expression = match_expression(query)
        if not expression or not target or limit <= 0:
            return []
        where, params = _target_sql(target, "c")
        # bm25 weights: item name, heading, text. A term in a heading says more than in text.
        rows = self._rows(
            "SELECT c.id, -bm25(chunks_fts, 2.0, 3.0, 1.0) AS score FROM chunks_fts "
            "JOIN chunks c ON c.id = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? AND ({where}) ORDER BY score DESC LIMIT ?",
            (expression, *params, limit),
        )
        return [(int(i), float(s)) for i, s in rows]

    def chunk_ids(self, target: Target) -> list[int]:
        where, params = _target_sql(target, "c")
        return [r[0] for r in self._rows(f"SELECT c.id FROM chunks c WHERE {where}", params)]

    def chunks(self, ids: Iterable[int]) -> dict[int, ChunkRecord]:
        ids = list(ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._rows(
            "SELECT c.id, c.context, c.item, i.name, c.seq, c.page, c.heading, c.text "
            "FROM chunks c JOIN items i ON i.context = c.context AND i.id = c.item "
            f"WHERE c.id IN ({marks})",
            ids,
        )
        return {r[0]: ChunkRecord(*r) for r in rows}

    def pages(self, context: str, item: str, first: int, last: int) -> list[ChunkRecord]:
        rows = self._rows(
            "SELECT c.id, c.context, c.item, i.name, c.seq, c.page, c.heading, c.text "
            "FROM chunks c JOIN items i ON i.context = c.context AND i.id = c.item "
            "WHERE c.context = ? AND c.item = ? AND c.page BETWEEN ? AND ? ORDER BY c.seq",
            (context, item, first, last),
        )
        return [ChunkRecord(*r) for r in rows]

    def items(self, target: Target) -> list[ItemRecord]:
        where, params = _target_sql(target, "i", item_column="id")
        rows = self._rows(
            "SELECT i.context, i.id, i.name, i.kind, i.pages, "
            "(SELECT count(*) FROM chunks c WHERE c.context = i.context AND c.item = i.id) "
            f"FROM items i WHERE {where} ORDER BY i.context, i.name, i.id",
            params,
        )
        return [ItemRecord(*r) for r in rows]

    def item(self, context: str, item: str) -> ItemRecord | None:
        found = self.items({context: [item]})
        return found[0] if found else None

    def count(self, target: Target, query: str | None) -> dict[str, tuple[int, int]]:
        """Context → (items, chunks) in `target`; with `query`, only those matching it."""
        where, params = _target_sql(target, "c")
        if query:
            expression = match_expression(query)
            if not expression:
                return dict.fromkeys(target, (0, 0))
            rows = self._rows(
                "SELECT c.context, count(DISTINCT c.item), count(*) FROM chunks_fts "
                "JOIN chunks c ON c.id = chunks_fts.rowid "
                f"WHERE chunks_fts MATCH ? AND ({where}) GROUP BY c.context",
                (expression, *params),
            )
        else:
            rows = self._rows(
                "SELECT c.context, count(DISTINCT c.item), count(*) FROM chunks c "
                f"WHERE {where} GROUP BY c.context",
                params,
            )
        counts = dict.fromkeys(target, (0, 0))
        counts.update({r[0]: (int(r[1]), int(r[2])) for r in rows})
        return counts

    def entities_matching(
        self, terms: Sequence[str], contexts: Sequence[str], limit: int
    ) -> list[tuple[int, str, str, str, int, int]]:
        """(id, context, name, kind, query terms matched, mentions) of entities whose names
        contain query terms, best first."""
        if not terms or not contexts:
            return []
        matched = " + ".join("(e.key LIKE ?)" for _ in terms)
        any_term = " OR ".join("e.key LIKE ?" for _ in terms)
        likes = [f"%{t.lower()}%" for t in terms]
        marks = ",".join("?" * len(contexts))
        return self._rows(
            f"SELECT e.id, e.context, e.name, e.kind, {matched} AS hits, "
            "(SELECT count(*) FROM mentions m WHERE m.entity = e.id) AS n "
            f"FROM entities e WHERE e.context IN ({marks}) AND ({any_term}) "
            "ORDER BY hits DESC, n DESC, length(e.name) LIMIT ?",
            (*likes, *contexts, *likes, limit),
        )

    def relations_of(
        self, entity_ids: Sequence[int], limit: int
    ) -> list[tuple[str, str, str, str, str, int, str]]:
        """(source, source kind, relation, target, target kind, support, chunk ids) touching
        the entities, the best supported first."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        return self._rows(
            "SELECT s.name, s.kind, r.relation, t.name, t.kind, count(*) AS support, "
            "group_concat(DISTINCT r.chunk) FROM relations r "
            "JOIN entities s ON s.id = r.source JOIN entities t ON t.id = r.target "
            f"WHERE r.source IN ({marks}) OR r.target IN ({marks}) "
            "GROUP BY r.source, r.relation, r.target "
            "ORDER BY (r.relation != 'mentions') DESC, support DESC LIMIT ?",
            (*entity_ids, *entity_ids, limit),
        )


def embedding_text(item_name: str, heading: str, text: str) -> str:
    """What is embedded for a chunk: the text, under where it sits (a chunk alone often does
    not say what it is about)."""
    where = " › ".join(p for p in (item_name, heading) if p)
    return f"{where}\n\n{text}" if where else text


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def query_terms(query: str) -> list[str]:
    """The words of a query, in order, each once."""
    return list(dict.fromkeys(t.lower() for t in _TERM.findall(query)))


def match_expression(query: str) -> str:
    """An FTS5 expression matching chunks with any word of `query`: quoted, so the query's
    punctuation is never read as FTS syntax; OR, so one missing word does not lose a chunk
    (BM25 ranks the ones with more of them first)."""
    return " OR ".join(f'"{t}"' for t in query_terms(query))


def _target_sql(target: Target, table: str, *, item_column: str = "item") -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for context, items in target.items():
        if items is None:
            clauses.append(f"{table}.context = ?")
            params.append(context)
        elif items:
            marks = ",".join("?" * len(items))
            clauses.append(f"({table}.context = ? AND {table}.{item_column} IN ({marks}))")
            params.extend([context, *items])
    return (" OR ".join(clauses) or "0"), params
