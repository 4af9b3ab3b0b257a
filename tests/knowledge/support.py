"""Shared builders of the knowledge tests: the sample workspace copied and ingested for real
(SQLite + FTS5, FAISS, the packaged all-MiniLM-L6-v2), a tiny PDF, tool results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from agentrt import ModelRequest
from agentrt.contexts import load_knowledge_config
from agentrt.knowledge.ingest import IngestReport, ingest
from agentrt.knowledge.search import KnowledgeBase, open_knowledge

SAMPLE = Path(__file__).resolve().parents[2] / "workspaces" / "knowledge"


def copy_sample(folder: Path) -> Path:
    """The sample knowledge workspace copied into `folder`, without any store."""
    return Path(shutil.copytree(SAMPLE, folder / "ws", ignore=shutil.ignore_patterns(".*")))


def ingested_sample(folder: Path) -> tuple[KnowledgeBase, IngestReport]:
    """A copy of the sample workspace, ingested; its knowledge base as the tool pack opens it."""
    root = copy_sample(folder)
    kb = open_knowledge(str(root))
    return kb, ingest(kb)


def fresh_kb(root: Path) -> KnowledgeBase:
    """A knowledge base over `root` opened anew (not the pack's cached one)."""
    config = load_knowledge_config(root)
    assert config is not None
    return KnowledgeBase(config)


def tool_results(request: ModelRequest) -> list[Any]:
    """The results of the latest turn's tool calls, as the model was shown them (JSON)."""
    results: list[Any] = []
    for message in reversed(request.messages):
        if message.role != "tool":
            break
        try:
            results.insert(0, json.loads(message.content))
        except ValueError:
            results.insert(0, message.content)
    return results


def write_pdf(path: Path, pages: list[str], title: str = "") -> Path:
    """A minimal valid PDF, one line of Helvetica text per page (enough for pypdf to read)."""
    objects: list[bytes] = []
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font = 3 + 2 * len(pages)
    for i, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info = None
    if title:
        objects.append(f"<< /Title ({title}) >>".encode())
        info = len(objects)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "")
    out += f"trailer\n{trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path
