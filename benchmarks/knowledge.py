"""Knowledge-base search: recall@5 and MRR of keyword, semantic and hybrid search.

    .venv/bin/python benchmarks/knowledge.py            # every question (about a minute)
    .venv/bin/python benchmarks/knowledge.py --quick    # one question in four
    .venv/bin/python benchmarks/knowledge.py --detail   # also each method's misses

The corpus is documentation that installed packages ship (data/knowledge/, with its licences
in SOURCES.md): 30 Markdown files in three contexts, about 600 chunks. It is ingested with the
project's own code (`agentrt.knowledge.ingest`, the packaged all-MiniLM-L6-v2 embedder) into a
store under a temporary folder, or `--store` to keep it between runs.

Each question in questions.jsonl names its gold sections as (item, heading); the gold chunks are
every chunk of those sections. Every question searches all three contexts (the model's choice of
context is not measured here), limit 10. recall@5: the share of questions with a gold chunk in
the top 5. MRR: the mean of 1 / rank of the first gold chunk (0 past rank 10).

Not measured: steps used per strategy, which needs a real model answering each question.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from rich.console import Console
from rich.table import Table

from agentrt.knowledge.contexts import load_knowledge_config
from agentrt.knowledge.ingest import ingest
from agentrt.knowledge.search import KnowledgeBase, SearchMethod
from agentrt.knowledge.store import Store
from agentrt.logs import configure_logging

DATA = Path(__file__).parent / "data" / "knowledge"
METHODS: tuple[SearchMethod, ...] = get_args(SearchMethod)
DEPTH = 10


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    gold: tuple[tuple[str, str], ...]
    """(item, the last part of a section's heading) of each section that answers it."""


@dataclass(frozen=True, slots=True)
class Score:
    method: SearchMethod
    recall_at_5: float
    mrr: float
    misses: list[str]
    """The questions without a gold chunk in the top 5."""


def load_questions(path: Path = DATA / "questions.jsonl") -> list[Question]:
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        raw = json.loads(line)
        gold = tuple((item, heading) for item, heading in raw["gold"])
        if not gold:
            msg = f"{path}:{number}: the question has no gold section"
            raise ValueError(msg)
        questions.append(Question(raw["question"], gold))
    return questions


def open_corpus(store: Path, contexts: list[str] | None = None) -> KnowledgeBase:
    """The benchmark corpus (`contexts` of it; None: all) ingested into `store`, only what
    changed since the last time."""
    config = load_knowledge_config(DATA)
    assert config is not None, f"{DATA} has no contexts.yaml"
    kb = KnowledgeBase(config, store=Store(store))
    ingest(kb, contexts)
    return kb


def ingested(kb: KnowledgeBase) -> dict[str, None]:
    """Every context of the store that holds items, as a search target."""
    return {c: None for c in kb.store.contexts() if kb.store.items({c: None})}


def gold_chunks(kb: KnowledgeBase, questions: list[Question]) -> list[set[int]]:
    """The chunk ids of each question's gold sections.

    :raises ValueError: a gold section that the corpus does not have (a typo, or a changed file)
    """
    records = kb.store.chunks(kb.store.chunk_ids(ingested(kb)))
    sections: dict[tuple[str, str], set[int]] = {}
    for c in records.values():
        sections.setdefault((c.item, c.heading.rsplit(" › ", 1)[-1]), set()).add(c.id)
    golds = []
    for question in questions:
        found: set[int] = set()
        for item, heading in question.gold:
            if (item, heading) not in sections:
                msg = f"{question.question!r}: no section {heading!r} in {item}"
                raise ValueError(msg)
            found |= sections[item, heading]
        golds.append(found)
    return golds


def evaluate(kb: KnowledgeBase, questions: list[Question]) -> list[Score]:
    """Each method's scores on `questions`, searching every ingested context."""
    target = ingested(kb)
    golds = gold_chunks(kb, questions)
    vectors = kb.embed_queries([q.question for q in questions])
    scores = []
    for method in METHODS:
        hits, reciprocal, misses = 0, 0.0, []
        for question, gold, vector in zip(questions, golds, vectors, strict=True):
            found = kb.search(
                question.question, target, method=method, limit=DEPTH, query_vector=vector
            )
            ranked = [h.chunk.id for h in found]
            rank = next((i for i, c in enumerate(ranked, start=1) if c in gold), None)
            if rank is not None and rank <= 5:
                hits += 1
            else:
                misses.append(question.question)
            reciprocal += 1 / rank if rank is not None else 0.0
        n = len(questions)
        scores.append(Score(method, hits / n, reciprocal / n, misses))
    return scores


def table(scores: list[Score], questions: int, chunks: int) -> Table:
    out = Table(title=f"knowledge search: {questions} questions, {chunks} chunks, all contexts")
    out.add_column("method")
    out.add_column("recall@5", justify="right")
    out.add_column(f"MRR@{DEPTH}", justify="right")
    for s in scores:
        out.add_row(s.method, f"{s.recall_at_5:.3f}", f"{s.mrr:.3f}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one question in four")
    parser.add_argument("--detail", action="store_true", help="also list each method's misses")
    parser.add_argument("--store", type=Path, help="keep the ingested corpus here")
    args = parser.parse_args()
    configure_logging(logging.ERROR)
    questions = load_questions()
    if args.quick:
        questions = questions[::4]
    with tempfile.TemporaryDirectory() as scratch:
        kb = open_corpus(args.store or Path(scratch))
        scores = evaluate(kb, questions)
        chunks = len(kb.store.chunk_ids(ingested(kb)))
        kb.store.close()
    console = Console()
    console.print(table(scores, len(questions), chunks))
    if args.detail:
        for s in scores:
            console.print(f"\n[bold]{s.method}[/] misses ({len(s.misses)}):")
            for miss in s.misses:
                console.print(f"  {miss}", highlight=False)


if __name__ == "__main__":
    main()
