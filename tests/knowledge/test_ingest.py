"""Ingestion for real: the sample workspace into SQLite (FTS5) and FAISS, incrementally."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from typer.testing import CliRunner

from agentrt import UserError, WorkspaceError
from agentrt.cli import app
from agentrt.contexts import load_knowledge_config
from agentrt.knowledge.ingest import ingest
from agentrt.knowledge.search import KnowledgeBase
from tests.knowledge.support import copy_sample, fresh_kb, write_pdf


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return copy_sample(tmp_path)


class TestIngest:
    def test_items_chunks_keywords_and_vectors(self, root: Path) -> None:
        kb = fresh_kb(root)
        steps: list[tuple[str, int, int]] = []
        report = ingest(kb, progress=lambda *step: steps.append(step))
        assert sorted(report.added) == [
            "guides/calibration.md",
            "guides/installation.md",
            "guides/maintenance.md",
            "support/error-codes.html",
            "support/warranty.txt",
        ]
        chunks = len(kb.store.chunk_ids({"guides": None, "support": None}))
        assert report.embedded == chunks > 15
        assert [s for s in steps if s[0] == "reading"] == [("reading", i, 5) for i in range(1, 6)]
        assert steps[-1] == ("embedding", chunks, chunks)
        # FTS5 keywords, with porter stemming: "calibrated" finds "calibrate"-words.
        (best, _), *_ = kb.store.keyword("E42 clock", {"support": None}, 5)
        assert "clock drift" in kb.store.chunks([best])[best].heading.lower()
        assert (root / ".knowledge" / "knowledge.sqlite3").is_file()
        assert (root / ".knowledge" / "guides.faiss").is_file()
        index = kb.store.index("guides", kb.embedder.fingerprint, kb.embedder.dimension)
        assert index.ntotal == len(kb.store.chunk_ids({"guides": None}))

    def test_again_reads_and_embeds_nothing(self, root: Path) -> None:
        ingest(fresh_kb(root))
        again = ingest(fresh_kb(root))
        assert (again.added, again.updated, again.removed, again.embedded) == ([], [], [], 0)
        assert again.unchanged == 5

    def test_only_what_changed_is_read_and_embedded(self, root: Path) -> None:
        kb = fresh_kb(root)
        ingest(kb)
        guide = root / "corpus" / "guides" / "maintenance.md"
        guide.write_text(guide.read_text() + "\nStorage\n-------\n\nKeep the console dry.\n")
        (root / "corpus" / "support" / "warranty.txt").unlink()
        write_pdf(root / "corpus" / "support" / "leaflet.pdf", ["Safety leaflet", "Recycling"])
        report = ingest(kb)
        assert report.updated == ["guides/maintenance.md"]
        assert report.added == ["support/leaflet.pdf"]
        assert report.removed == ["support/warranty.txt"]
        assert report.unchanged == 3
        # The maintenance chunks whose text did not change keep their vectors: only the new
        # section and the two PDF pages are embedded.
        assert report.embedded == 3
        assert [i.id for i in kb.store.items({"support": None})] == [
            "error-codes.html",
            "leaflet.pdf",
        ]
        hits = kb.search("keep the console dry", {"guides": None}, method="semantic", limit=1)
        assert hits[0].chunk.heading == "Maintenance › Storage"

    def test_a_broken_file_is_skipped_and_the_rest_goes_on(self, root: Path) -> None:
        (root / "corpus" / "guides" / "broken.pdf").write_bytes(b"not a pdf at all")
        report = ingest(fresh_kb(root))
        (skipped,) = report.skipped
        assert "broken.pdf" in skipped
        assert len(report.added) == 5

    def test_an_unknown_context_is_refused(self, root: Path) -> None:
        with pytest.raises(UserError, match=r"unknown context\(s\) manuals \(declared: guides"):
            ingest(fresh_kb(root), ["manuals"])

    def test_a_missing_source_is_named(self, root: Path) -> None:
        (root / "corpus" / "support" / "warranty.txt").unlink()
        (root / "corpus" / "support" / "error-codes.html").unlink()
        (root / "corpus" / "support").rmdir()
        with pytest.raises(UserError, match=r"context 'support': source .*support does not"):
            ingest(fresh_kb(root))


class TestDeclaration:
    def test_errors_name_the_field(self, tmp_path: Path) -> None:
        (tmp_path / "contexts.yaml").write_text(
            "contexts:\n"
            "  - {id: a, name: A, description: d, sources: [x]}\n"
            "  - {id: a, name: B, description: d, sources: [y]}\n"
        )
        with pytest.raises(WorkspaceError, match=r"context ids must be unique; repeated: a"):
            load_knowledge_config(tmp_path)
        (tmp_path / "contexts.yaml").write_text(
            "contexts:\n  - {id: A B, name: A, description: d, sources: []}\n"
        )
        with pytest.raises(WorkspaceError, match=r"field 'contexts.0.id'.*field 'contexts.0.s"):
            load_knowledge_config(tmp_path)
        (tmp_path / "contexts.yaml").write_text(
            "contexts:\n  - {id: a, name: A, description: d, sources: [x]}\n"
            "tools:\n  wiki_search: {b: false}\n"
        )
        with pytest.raises(WorkspaceError, match=r"tools.wiki_search names unknown context\(s\) b"):
            load_knowledge_config(tmp_path)

    def test_a_workspace_without_one_has_none(self, tmp_path: Path) -> None:
        assert load_knowledge_config(tmp_path) is None


@pytest.fixture
def _logging_restored() -> Iterator[None]:
    """The command sets up logging to the runner's stream, closed once it returns."""
    yield
    structlog.reset_defaults()


@pytest.mark.usefixtures("_logging_restored")
class TestCommand:
    def test_agentrt_ingest(self, root: Path) -> None:
        runner = CliRunner()
        first = runner.invoke(app, ["ingest", "--workspace", str(root)])
        assert first.exit_code == 0, first.output
        assert "5 added, 0 updated, 0 unchanged, 0 removed" in first.stdout
        again = runner.invoke(app, ["ingest", "--workspace", str(root), "-c", "guides"])
        assert again.exit_code == 0
        assert "0 added, 0 updated, 3 unchanged, 0 removed; 0 chunk(s) embedded" in again.stdout
        kb: KnowledgeBase = fresh_kb(root)
        assert kb.store.contexts() == ["guides", "support"]

    def test_a_workspace_without_contexts(self, tmp_path: Path) -> None:
        result = CliRunner().invoke(app, ["ingest", "--workspace", str(tmp_path)])
        assert result.exit_code == 2
        assert "declares no contexts: add a contexts.yaml" in result.output
