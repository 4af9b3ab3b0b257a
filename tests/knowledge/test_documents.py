"""Chunking by structure: Markdown headings, HTML outlines, text pages, PDF pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrt import UserError
from agentrt.knowledge.documents import read_document
from tests.knowledge.support import write_pdf


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class TestMarkdown:
    def test_sections_at_headings_keep_their_heading_path(self, tmp_path: Path) -> None:
        doc = read_document(
            write(
                tmp_path,
                "guide.md",
                "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n### On *Windows*\n\nClick.\n\n"
                "## [Use](http://x)\n\nCall it.\n\n## `connect_sse` <small>new</small>\n\nSSE.\n\n"
                "# Badges [![b](http://b/x.svg)](http://b) **bold**\n\nB.\n",
            ),
            1200,
        )
        assert doc.name == "Guide"
        assert [(c.page, c.heading, c.text) for c in doc.chunks] == [
            (1, "Guide", "Intro."),
            (2, "Guide › Install", "Run it."),
            (3, "Guide › Install › On Windows", "Click."),
            (4, "Guide › Use", "Call it."),
            (5, "Guide › connect_sse new", "SSE."),
            (6, "Badges bold", "B."),
        ]
        assert doc.pages == 6

    def test_setext_headings_and_fenced_code(self, tmp_path: Path) -> None:
        """`# not a heading` inside a fence stays text; `---` under a paragraph line is an h2,
        and a `---` after a blank line is a rule."""
        text = "Title\n=====\n\nA.\n\nPart\n----\n\n```sh\n# not a heading\n```\n\n---\n\nB.\n"
        doc = read_document(write(tmp_path, "s.md", text), 1200)
        assert doc.name == "Title"
        assert [c.heading for c in doc.chunks] == ["Title", "Title › Part"]
        assert "# not a heading" in doc.chunks[1].text
        assert doc.chunks[1].text.endswith("---\n\nB.")

    def test_a_long_section_is_split_at_paragraphs(self, tmp_path: Path) -> None:
        paragraphs = [f"Paragraph {i} " + "word " * 40 for i in range(10)]
        doc = read_document(write(tmp_path, "l.md", "# L\n\n" + "\n\n".join(paragraphs)), 600)
        assert len(doc.chunks) > 1
        assert all(len(c.text) <= 600 for c in doc.chunks)
        assert {c.page for c in doc.chunks} == {1}
        assert "".join(c.text for c in doc.chunks).count("Paragraph") == 10
        assert all(c.text.startswith("Paragraph") for c in doc.chunks)


class TestOtherFormats:
    def test_html_becomes_an_outline_without_navigation_or_scripts(self, tmp_path: Path) -> None:
        html = (
            "<html><head><title>Errors</title><script>var x = 1;</script></head><body>"
            "<nav>Home · Menu</nav><h1>Codes</h1><p>Intro &amp; more.</p>"
            "<h2>E01</h2><p>No <b>signal</b>.</p><ul><li>one</li><li>two</li></ul>"
            "<pre>line 1\nline 2</pre></body></html>"
        )
        doc = read_document(write(tmp_path, "e.html", html), 1200)
        assert doc.name == "Errors"
        assert [(c.heading, c.text) for c in doc.chunks] == [
            ("Codes", "Intro & more."),
            ("Codes › E01", "No signal.\n\n- one\n- two\n\n```\nline 1\nline 2\n```"),
        ]

    def test_text_pages_at_form_feeds(self, tmp_path: Path) -> None:
        doc = read_document(write(tmp_path, "t.txt", "first page\fsecond page"), 1200)
        assert [(c.page, c.text) for c in doc.chunks] == [(1, "first page"), (2, "second page")]
        assert doc.name == "t"

    def test_pdf_pages(self, tmp_path: Path) -> None:
        pdf = write_pdf(
            tmp_path / "m.pdf", ["Hello from page one", "Page two (the end)"], title="Manual"
        )
        doc = read_document(pdf, 1200)
        assert doc.kind == "pdf"
        assert doc.name == "Manual"
        assert [(c.page, c.text) for c in doc.chunks] == [
            (1, "Hello from page one"),
            (2, "Page two (the end)"),
        ]

    def test_an_unsupported_file_is_refused_by_name(self, tmp_path: Path) -> None:
        with pytest.raises(UserError, match=r"x\.docx: unsupported file type \(supported: .*\.md"):
            read_document(write(tmp_path, "x.docx", "?"), 1200)
