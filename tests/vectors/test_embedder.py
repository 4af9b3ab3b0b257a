"""The embedder's query path: a cache by text, micro-batches of concurrent calls, one thread.

Every test runs the packaged MiniLM; the model is wrapped only to count (or hold) its calls.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import anyio
import numpy as np
import pytest
import torch

from agentrt.vectors import embedder as embedder_module
from agentrt.vectors.embedder import QUERY_TEXTS, Embedder, load_embedder

QUESTIONS = [
    "which customers paid late last month",
    "send an email to the sales team",
    "what is the weather in Lyon",
    "how many orders shipped to Canada in 2023",
    "delete the draft invoices",
]


class Counting:
    """The real SentenceTransformer, with each `encode` call's texts and torch threads noted.

    :param gate: when given, the first call waits for it (after setting `entered`), so that a
        test can queue calls behind a batch that is running
    """

    def __init__(self, model: Any, gate: threading.Event | None = None) -> None:
        self.model = model
        self.calls: list[list[str]] = []
        self.threads: list[int] = []
        self.gate = gate
        self.entered = threading.Event()
        self.fail_on: str | None = None

    def get_embedding_dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    def encode(self, texts: Sequence[str], **kwargs: Any) -> Any:
        self.calls.append(list(texts))
        self.threads.append(torch.get_num_threads())
        if self.gate is not None and len(self.calls) == 1:
            self.entered.set()
            self.gate.wait()
        if self.fail_on in texts:
            msg = f"cannot embed {self.fail_on!r}"
            raise RuntimeError(msg)
        return self.model.encode(texts, **kwargs)


@pytest.fixture(scope="module")
def packaged() -> Embedder:
    return load_embedder()


def counted(packaged: Embedder, gate: threading.Event | None = None) -> tuple[Embedder, Counting]:
    """A fresh embedder (an empty cache) around the packaged model, its calls counted."""
    model = Counting(packaged._model, gate)
    return Embedder(model, packaged.name), model


def alone(packaged: Embedder, text: str) -> Any:
    """`text` encoded by itself, by the model, past every cache."""
    return packaged._model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]


class TestCache:
    def test_the_same_question_twice_is_encoded_once(self, packaged: Embedder) -> None:
        embedder, model = counted(packaged)
        first = embedder.encode([QUESTIONS[0]])
        again = embedder.encode([QUESTIONS[0]])
        assert model.calls == [[QUESTIONS[0]]]
        np.testing.assert_allclose(first, again, atol=1e-6)
        # A question with a cached context: only the new text reaches the model.
        both = embedder.encode([QUESTIONS[1], QUESTIONS[0]])
        assert model.calls == [[QUESTIONS[0]], [QUESTIONS[1]]]
        np.testing.assert_allclose(both[1], first[0], atol=1e-6)
        np.testing.assert_allclose(both[0], alone(packaged, QUESTIONS[1]), atol=1e-5)

    def test_cleared_the_question_is_encoded_again(self, packaged: Embedder) -> None:
        embedder, model = counted(packaged)
        embedder.encode([QUESTIONS[0]])
        embedder.clear_cache()
        embedder.encode([QUESTIONS[0]])
        assert model.calls == [[QUESTIONS[0]], [QUESTIONS[0]]]

    def test_vectors_returned_are_the_callers_own(self, packaged: Embedder) -> None:
        embedder, _ = counted(packaged)
        first = embedder.encode([QUESTIONS[0]])
        kept = first.copy()
        first[:] = 0.0  # the caller may write to its array ...
        again = embedder.encode([QUESTIONS[0]])
        np.testing.assert_allclose(again, kept, atol=1e-6)  # ... and the cache is untouched
        assert not np.shares_memory(first, again)

    def test_the_cache_is_bounded(
        self, packaged: Embedder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The least recently used question goes first."""
        monkeypatch.setattr(embedder_module, "QUERY_CACHE", 2)
        embedder, model = counted(packaged)
        for text in QUESTIONS[:2]:
            embedder.encode([text])
        embedder.encode([QUESTIONS[0]])  # now the most recent
        embedder.encode([QUESTIONS[2]])  # QUESTIONS[1] goes
        embedder.encode([QUESTIONS[0]])
        assert len(model.calls) == 3
        embedder.encode([QUESTIONS[1]])
        assert model.calls[-1] == [QUESTIONS[1]]

    def test_documents_in_bulk_bypass_it(self, packaged: Embedder) -> None:
        """More than `QUERY_TEXTS` texts are indexing, not questions: encoded as given."""
        embedder, model = counted(packaged)
        texts = [f"tool number {i}" for i in range(QUERY_TEXTS + 1)]
        embedder.encode(texts)
        embedder.encode(texts)
        assert model.calls == [texts, texts]

    def test_a_failed_batch_fails_its_callers_and_the_next_one_runs(
        self, packaged: Embedder
    ) -> None:
        embedder, model = counted(packaged)
        model.fail_on = QUESTIONS[0]
        with pytest.raises(RuntimeError, match="cannot embed"):
            embedder.encode([QUESTIONS[0]])
        model.fail_on = None
        np.testing.assert_allclose(
            embedder.encode([QUESTIONS[0]])[0], alone(packaged, QUESTIONS[0]), atol=1e-5
        )


class TestBatching:
    def test_calls_arriving_during_a_batch_are_encoded_together(self, packaged: Embedder) -> None:
        """While one question is being encoded, four `aencode` calls arrive: the next batch
        holds all four, and each gets the vector it would have got alone."""
        gate = threading.Event()
        embedder, model = counted(packaged, gate)
        first = threading.Thread(target=embedder.encode, args=([QUESTIONS[0]],))
        first.start()
        model.entered.wait()
        queue = embedder._queries

        def release_when_queued() -> None:
            # The batcher notifies its condition whenever a request is queued. The timeout only
            # keeps a broken batcher from hanging the suite.
            try:
                with queue._changed:
                    assert queue._changed.wait_for(lambda: len(queue._pending) == 4, timeout=120)
            finally:
                gate.set()

        async def main() -> list[Any]:
            results: list[Any] = [None] * 4

            async def ask(i: int) -> None:
                results[i] = await embedder.aencode([QUESTIONS[i + 1]])

            async with anyio.create_task_group() as group:
                for i in range(4):
                    group.start_soon(ask, i)
                group.start_soon(anyio.to_thread.run_sync, release_when_queued)
            return results

        results = anyio.run(main)
        first.join()
        assert model.calls[0] == [QUESTIONS[0]]
        assert sorted(model.calls[1]) == sorted(QUESTIONS[1:])
        assert len(model.calls) == 2
        for text, got in zip(QUESTIONS[1:], results, strict=True):
            assert got.shape == (1, packaged.dimension)
            np.testing.assert_allclose(got[0], alone(packaged, text), atol=1e-5)


class TestThreads:
    def test_a_query_runs_on_one_thread_and_the_setting_is_put_back(
        self, packaged: Embedder
    ) -> None:
        """torch's intra-op threads are per calling thread: the query path sets one for its
        encode and restores the caller's; bulk encoding keeps the caller's."""
        embedder, model = counted(packaged)
        before = torch.get_num_threads()
        torch.set_num_threads(2)
        try:
            embedder.encode([QUESTIONS[0]])
            assert model.threads == [1]
            assert torch.get_num_threads() == 2
            embedder.encode([f"document {i}" for i in range(QUERY_TEXTS + 1)])
            assert model.threads == [1, 2]
        finally:
            torch.set_num_threads(before)
