"""Internal. Embeddings of documents, cached on disk by each document's hash.

A store is one `.npz` file: the hash of every document it holds, and its vector. Asking for the
vectors of some documents embeds only those the store lacks, then rewrites the store to hold
exactly the documents asked for, so that it does not grow with every edit. Files are written
through a temporary file: a crash never leaves a half-written cache.

The tool index (`agentrt.catalog.index`), the schema index (`agentrt.sql.grounding`) and the example
selector (`agentrt.sql.examples`) keep their vectors this way.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from agentrt.vectors.embedder import Embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["embed_cached", "write_atomic"]


def embed_cached(
    documents: Sequence[str], embedder: Embedder, store: Path | None
) -> tuple[npt.NDArray[np.float32], int]:
    """The vectors of `documents` (one row each, in order), and how many had to be embedded.

    :param store: the `.npz` file to reuse vectors from and to rewrite; None embeds everything
        and keeps nothing
    """
    import numpy as np

    hashes = [hashlib.sha256(d.encode()).hexdigest() for d in documents]
    known = _load(store) if store is not None else {}
    missing = [i for i, h in enumerate(hashes) if h not in known]
    if missing:
        fresh = embedder.encode([documents[i] for i in missing])
        for row, i in enumerate(missing):
            known[hashes[i]] = fresh[row]
    vectors = np.zeros((len(documents), embedder.dimension), dtype="float32")
    for i, h in enumerate(hashes):
        vectors[i] = known[h]
    if store is not None and (missing or len(known) != len(set(hashes))):
        store.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(store, lambda f: np.savez(f, hashes=hashes, vectors=vectors))
    return vectors, len(missing)


def write_atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write `path` through a temporary file beside it, replaced in one step."""
    partial = path.with_name(f"{path.name}.partial-{os.getpid()}")
    with partial.open("wb") as f:
        write(f)
    os.replace(partial, path)


def _load(path: Path) -> dict[str, Any]:
    import numpy as np

    if not path.is_file():
        return {}
    with np.load(path) as stored:
        return dict(zip(stored["hashes"].tolist(), stored["vectors"], strict=True))
