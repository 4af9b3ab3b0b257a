"""Keyword, semantic and hybrid search over the ingested sample; fusion; the reranker."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrt import Scope, ToolError
from agentrt.knowledge.search import KnowledgeBase, fuse
from tests.knowledge.support import ingested_sample

ALL = {"guides": None, "support": None}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    return ingested_sample(tmp_path_factory.mktemp("search"))[0]


def items(kb: KnowledgeBase, query: str, method: str, limit: int = 3) -> list[str]:
    hits = kb.search(query, ALL, method=method, limit=limit)  # type: ignore[arg-type]
    return [f"{h.chunk.item} › {h.chunk.heading.rsplit(' › ', 1)[-1]}" for h in hits]


class TestMethods:
    def test_keyword_finds_exact_codes(self, kb: KnowledgeBase) -> None:
        assert items(kb, "E07", "keyword", 1) == ["error-codes.html › E07 – sensor fault"]

    def test_semantic_finds_other_wording(self, kb: KnowledgeBase) -> None:
        """No word of the question is in the answer's section, and keywords find nothing."""
        query = "frozen precipitation measurement accessory"
        assert items(kb, query, "semantic", 1) == ["maintenance.md › Winter care"]

    def test_hybrid_has_what_either_finds(self, kb: KnowledgeBase) -> None:
        assert "error-codes.html › E07 – sensor fault" in items(kb, "E07", "hybrid")
        assert "maintenance.md › Winter care" in items(
            kb, "frozen precipitation measurement accessory", "hybrid"
        )

    def test_scores_are_best_first(self, kb: KnowledgeBase) -> None:
        for method in ("keyword", "semantic", "hybrid"):
            hits = kb.search("rain gauge", ALL, method=method, limit=5)  # type: ignore[arg-type]
            scores = [h.score for h in hits]
            assert len(hits) == 5
            assert scores == sorted(scores, reverse=True)

    def test_a_query_of_punctuation_only_finds_nothing_by_keyword(self, kb: KnowledgeBase) -> None:
        """FTS5 syntax in a query is never read as syntax."""
        assert kb.search('"*) :( ^ -', ALL, method="keyword") == []

    def test_items_restrict_both_methods(self, kb: KnowledgeBase) -> None:
        target = {"guides": ["calibration.md"]}
        for method in ("keyword", "semantic", "hybrid"):
            hits = kb.search("batteries rain", target, method=method)  # type: ignore[arg-type]
            assert hits
            assert {h.chunk.item for h in hits} == {"calibration.md"}


class TestFusion:
    def test_reciprocal_rank(self) -> None:
        fused = fuse([[1, 2, 3], [3, 1]])
        assert [i for i, _ in fused] == [1, 3, 2]
        assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)


class TestTargets:
    def test_unknown_disabled_and_out_of_scope_contexts(self, kb: KnowledgeBase) -> None:
        with pytest.raises(ToolError, match=r"'manuals': there is no such context\. Readable"):
            kb.target("search_content", ["manuals"], None)
        with pytest.raises(ToolError, match=r"retrieve_knowledge_graph is not enabled for it"):
            kb.target("retrieve_knowledge_graph", ["support"], None)
        scope = Scope.parse(["guides/calibration.md"])
        assert kb.target("search_content", None, scope) == {"guides": ["calibration.md"]}

    def test_not_ingested(self, tmp_path: Path) -> None:
        from tests.knowledge.support import copy_sample, fresh_kb

        kb = fresh_kb(copy_sample(tmp_path))
        with pytest.raises(ToolError, match=r"guides not ingested yet: run `agentrt ingest"):
            kb.target("search_content", ["guides"], None)


class TestReranker:
    def test_off_by_default(self, kb: KnowledgeBase) -> None:
        assert kb.config.reranker is None
        assert kb.reranker is None

    def test_a_cross_encoder_that_is_not_installed_leaves_the_order(
        self, kb: KnowledgeBase
    ) -> None:
        config = kb.config.model_copy(update={"reranker": "no-such/cross-encoder"})
        plain = kb.search("rain gauge", ALL, limit=5)
        reranked = KnowledgeBase(config, store=kb.store, embedder=kb.embedder)
        assert reranked.reranker is None
        assert reranked.search("rain gauge", ALL, limit=5) == plain

    def test_a_reranker_reorders(self, kb: KnowledgeBase) -> None:
        """What a cross-encoder returns decides the order (here: shortest text first)."""

        class ByLength:
            def score(self, query: str, texts: list[str]) -> list[float]:
                return [-float(len(t)) for t in texts]

        reranked = KnowledgeBase(
            kb.config, store=kb.store, embedder=kb.embedder, reranker=ByLength()
        )
        hits = reranked.search("rain gauge", ALL, limit=4)
        lengths = [len(h.chunk.text) for h in hits]
        assert lengths == sorted(lengths)
