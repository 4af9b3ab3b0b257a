"""What a retrieval run gives back: the chunks it found and an answer that cites them.

Read from the run's events alone (as evaluation reads trajectories): every retrieval tool
returns its chunks as records with `chunk`, `context`, `item` and `score`, and the answer
lists the ones it rests on (`ChunkId`s, `finish_retrieval`'s `sources`) or cites them in its
text as `[c12]` (several: `[c12, c31]`). During the run, `finish_retrieval` checks the
citations against the chunks the tools returned (`remember`, `cited_answer`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, JsonValue, StringConstraints

from agentrt.events import Event, RunFinishedEvent, RunStatus, ToolFinishedEvent
from agentrt.exceptions import ToolError

__all__ = [
    "FOUND",
    "ChunkId",
    "FoundChunk",
    "RetrievalResult",
    "cited",
    "cited_answer",
    "collect_chunks",
    "remember",
    "sources",
]

FOUND = "knowledge.found"
"""The artifact (run or session) holding every chunk record a retrieval tool returned."""

ChunkId = Annotated[str, StringConstraints(pattern=r"^c[0-9]{1,12}$")]
"""A chunk's id as tools return it and answers cite it: `c` and the store's chunk number. As a
tool parameter's type it is also the embedded model's grammar: a 1.5B asked to cite in its
answer's text named documents instead (0 of 5 held-out runs cited a chunk, issue 24)."""

_CITATION = re.compile(r"\[\s*(c\d+(?:\s*,\s*c\d+)*)\s*\]")


class FoundChunk(BaseModel):
    model_config = ConfigDict(frozen=True)

    chunk: str
    """Its id, as cited: `c` and the store's chunk number."""
    context: str
    item: str
    item_name: str = ""
    page: int = 0
    heading: str = ""
    score: float
    """The best score any tool gave it in the run (tools and methods score differently)."""
    text: str = ""


class RetrievalResult(BaseModel):
    answer: str | None
    status: RunStatus
    chunks: list[FoundChunk]
    """Every chunk the run's tools returned, in the order first found."""
    citations: list[FoundChunk]
    """The chunks the answer cites, in the order it cites them."""

    @classmethod
    def from_events(cls, events: Sequence[Event]) -> RetrievalResult:
        end = events[-1] if events else None
        if not isinstance(end, RunFinishedEvent):
            msg = "the events do not end with run_finished: not a whole run"
            raise ValueError(msg)
        found = collect_chunks(
            e.output for e in events if isinstance(e, ToolFinishedEvent) and e.status == "ok"
        )
        citations = [found[c] for c in cited(end.answer or "") if c in found]
        return cls(
            answer=end.answer, status=end.status, chunks=list(found.values()), citations=citations
        )


def collect_chunks(outputs: Iterable[JsonValue]) -> dict[str, FoundChunk]:
    """Chunk records anywhere in tool outputs, by id; a chunk found twice keeps its best score
    and its text, wherever that was given."""
    found: dict[str, FoundChunk] = {}

    def walk(value: JsonValue) -> None:
        if isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            if {"chunk", "context", "item", "score"} <= value.keys():
                chunk = FoundChunk.model_validate(value)
                before = found.get(chunk.chunk)
                if before is not None:
                    chunk = chunk.model_copy(
                        update={
                            "score": max(before.score, chunk.score),
                            "text": chunk.text or before.text,
                        }
                    )
                found[chunk.chunk] = chunk
                return
            for v in value.values():
                walk(v)

    for output in outputs:
        walk(output)
    return found


def cited(answer: str) -> list[str]:
    """Chunk ids an answer cites, in order, each once."""
    ids = (c.strip() for m in _CITATION.finditer(answer) for c in m.group(1).split(","))
    return list(dict.fromkeys(ids))


def _listed(answer: str, ids: Iterable[str]) -> list[str]:
    """`ids`, then the chunk ids `answer` cites, each once."""
    return list(dict.fromkeys([*ids, *cited(answer)]))


def sources(answer: str, found: Mapping[str, Mapping[str, Any]], ids: Iterable[str] = ()) -> str:
    """The answer followed by a list of the chunks it cites and of `ids` (all in `found`)."""
    lines = []
    for chunk_id in _listed(answer, ids):
        c = found[chunk_id]
        where = f"{c['context']}/{c['item']}, page {c['page']}"
        heading = f" › {c['heading']}" if c.get("heading") else ""
        lines.append(f"[{chunk_id}] {c['item_name']}{heading} ({where})")
    return answer.strip() + ("\n\nSources:\n" + "\n".join(lines) if lines else "")


def remember(artifacts: dict[str, Any], records: Iterable[Mapping[str, Any]]) -> None:
    """Note chunk records a tool returned, so that the answer may cite them."""
    found: dict[str, dict[str, Any]] = artifacts.setdefault(FOUND, {})
    for record in records:
        found.setdefault(record["chunk"], dict(record))


def cited_answer(answer: str, artifacts: Mapping[str, Any], ids: Sequence[str] = ()) -> str:
    """The answer with its sources listed (`ids`, then what its text cites), once every one
    is a chunk found before.

    :raises ToolError: a source or citation is of a chunk no tool of the run (or session)
        returned
    """
    found: Mapping[str, Mapping[str, Any]] = artifacts.get(FOUND, {})
    unknown = [c for c in _listed(answer, ids) if c not in found]
    if unknown:
        msg = (
            f"the answer cites {', '.join(unknown)}, which no search returned; cite only the "
            f"chunk ids of results you were given, or search again"
        )
        raise ToolError(msg)
    return sources(answer, found, ids)
