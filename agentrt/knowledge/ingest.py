"""Ingest: make the store match the declared sources, doing only the work that changed.

    for each context:  files ──► content hash ──► unchanged: skip
                                                 └─► changed or new: read, chunk, store (+ graph)
                       stored items whose file is gone ──► removed
    chunks without a vector ──► embedded in batches (a chunk whose text is unchanged keeps its
                                vector, even when its item changed)
    each context's FAISS index ──► rebuilt from the stored vectors when stale

A file that cannot be read is reported and skipped; the rest of the ingest goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentrt.contexts import ContextSpec, KnowledgeConfig
from agentrt.exceptions import UserError
from agentrt.knowledge.documents import SUFFIXES, file_hash, read_document
from agentrt.knowledge.search import KnowledgeBase

__all__ = ["IngestReport", "Progress", "ingest", "source_files"]

Progress = Callable[[str, int, int], None]
"""`progress(stage, done, total)`, stage `reading` or `embedding`; called after each step."""

EMBED_BATCH = 64


@dataclass(slots=True)
class IngestReport:
    added: list[str] = field(default_factory=list)
    """`context/item` of each new item."""
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Files that could not be read, each with the reason."""
    embedded: int = 0
    """Chunk texts embedded by this ingest; every other chunk kept its vector."""


def ingest(
    kb: KnowledgeBase,
    contexts: Sequence[str] | None = None,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> IngestReport:
    """Bring `contexts` (None: all declared) of the store up to date with their sources.

    :param force: read every file again, even those whose content has not changed
    :raises UserError: an unknown context, or two files of a context with one item id
    """
    config, store = kb.config, kb.store
    declared = config.by_id
    unknown = [c for c in contexts or () if c not in declared]
    if unknown:
        msg = f"unknown context(s) {', '.join(unknown)} (declared: {', '.join(declared)})"
        raise UserError(msg)
    report = IngestReport()
    report.removed += [f"{c}/" for c in store.sync_contexts(config.contexts)]
    chosen = [declared[c] for c in contexts] if contexts else config.contexts
    files = {spec.id: source_files(config, spec) for spec in chosen}
    total = sum(len(f) for f in files.values())
    done = 0
    for spec in chosen:
        stored = store.item_hashes(spec.id)
        for item, path in files[spec.id].items():
            content_hash = file_hash(path, config.chunk_chars)
            if not force and stored.get(item) == content_hash:
                report.unchanged += 1
            else:
                try:
                    doc = read_document(path, config.chunk_chars)
                except Exception as exc:  # a broken PDF must not stop the other files
                    report.skipped.append(f"{path}: {type(exc).__name__}: {exc}")
                else:
                    store.replace_item(spec.id, item, str(path), content_hash, doc)
                    (report.updated if item in stored else report.added).append(f"{spec.id}/{item}")
            done += 1
            if progress is not None:
                progress("reading", done, total)
        for item in sorted(set(stored) - set(files[spec.id])):
            store.remove_item(spec.id, item)
            report.removed.append(f"{spec.id}/{item}")

    embedder = kb.embedder
    missing = store.missing_vectors(embedder.fingerprint)
    for start in range(0, len(missing), EMBED_BATCH):
        batch = missing[start : start + EMBED_BATCH]
        vectors = embedder.encode([text for _, text in batch], batch_size=EMBED_BATCH)
        store.put_vectors(embedder.fingerprint, [h for h, _ in batch], vectors)
        report.embedded += len(batch)
        if progress is not None:
            progress("embedding", report.embedded, len(missing))
    store.prune_vectors()
    for spec in chosen:
        store.index(spec.id, embedder.fingerprint, embedder.dimension)
    return report


def source_files(config: KnowledgeConfig, spec: ContextSpec) -> dict[str, Path]:
    """Item id → file, for every readable file of a context's sources.

    An item's id is its path inside its source folder (for a file source, its name).

    :raises UserError: a source that does not exist, or two files with the same id
    """
    found: dict[str, Path] = {}
    for source in config.source_paths(spec):
        if source.is_file():
            candidates = [(source.name, source)]
        elif source.is_dir():
            candidates = [
                (p.relative_to(source).as_posix(), p)
                for p in sorted(source.rglob("*"))
                if p.is_file()
                and p.suffix.lower() in SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(source).parts)
            ]
        else:
            msg = f"context {spec.id!r}: source {source} does not exist"
            raise UserError(msg)
        for item, path in candidates:
            if item in found and found[item] != path:
                msg = (
                    f"context {spec.id!r}: {found[item]} and {path} would both be item "
                    f"{item!r}; put them in one source folder, or in different contexts"
                )
                raise UserError(msg)
            found[item] = path
    return found
