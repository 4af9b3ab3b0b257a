"""Retrieval over the workspace's contexts (`contexts.yaml`): search, count, list, read, cite.

Every search result is a chunk record (`chunk`, `context`, `item`, `item_name`, `page`,
`heading`, `score`, and `text` when asked for); an answer lists the ones it rests on. A search
that finds an item offers the session tools that read on in it (`agentrt.knowledge.pages`).
Tools read only the contexts the configuration enables for them, within the run's scope.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from agentrt import ToolContext, ToolError, tool
from agentrt.knowledge.answer import ChunkId, cited_answer, remember
from agentrt.knowledge.pages import offer_item_tools
from agentrt.knowledge.search import Hit, KnowledgeBase, open_knowledge
from agentrt.knowledge.vfs import files_of

WORKSPACE = Path(__file__).resolve().parents[1]


def _kb() -> KnowledgeBase:
    return open_knowledge(str(WORKSPACE))


def _found(ctx: ToolContext, kb: KnowledgeBase, hits: list[Hit], *, text: bool) -> dict[str, Any]:
    """The records of `hits`, remembered for citation, with the item tools they offer."""
    records = [h.record(text=text) for h in hits]
    remember(ctx.artifacts, records)
    offered = offer_item_tools(ctx, kb, hits)
    result: dict[str, Any] = {"results": records}
    if offered:
        result["new_tools"] = offered
    if not hits:
        result["note"] = "nothing found: try other words, another method or another context"
    return result


@tool
def search_content(
    ctx: ToolContext,
    query: str,
    knowledge_base: str,
    searchMethod: Literal["hybrid", "semantic", "keyword"] = "hybrid",
    includeContent: bool = True,
    limit: int = 10,
    item_names: list[str] | None = None,
) -> dict[str, Any]:
    """Search the content of ONE knowledge base for chunks relevant to a query.

    Args:
        query: What to look for, in the language of the user's question.
        knowledge_base: The id of the knowledge base (context) to search; one per call.
        searchMethod: "hybrid" (default, best overall), "keyword" (exact terms, codes,
            names) or "semantic" (meaning, other wording).
        includeContent: false returns where matches are (item, page, heading) without text.
        limit: How many chunks to return (1-50).
        item_names: Only search items whose name contains one of these.
    """
    kb = _kb()
    target = kb.target("search_content", [knowledge_base], ctx.scope)
    if item_names:
        target = kb.restrict(target, item_names)
    hits = kb.search(query, target, method=searchMethod, limit=max(1, min(limit, 50)))
    return _found(ctx, kb, hits, text=includeContent)


@tool
def search_items_by_name(
    ctx: ToolContext, query: str, knowledge_bases: list[str] | None = None, limit: int = 20
) -> dict[str, Any]:
    """Find items (documents) whose name or file name holds words of the query; offers
    tools to read the best ones.

    Args:
        query: Words of the name or title.
        knowledge_bases: The ids of the knowledge bases to look in; all when omitted.
        limit: How many items to return.
    """
    kb = _kb()
    target = kb.target("search_items_by_name", knowledge_bases, ctx.scope)
    named = kb.items_named(query, target, max(1, limit))
    items = [
        {
            "context": r.context,
            "item": r.id,
            "item_name": r.name,
            "pages": r.pages,
            "chunks": r.chunks,
            "words_matched": words,
        }
        for r, words in named
    ]
    offered = offer_item_tools(ctx, kb, [r for r, _ in named])
    return {"items": items, **({"new_tools": offered} if offered else {})}


@tool
def count_items_or_chunks(
    ctx: ToolContext, knowledge_bases: list[str] | None = None, content_query: str | None = None
) -> dict[str, dict[str, int]]:
    """Count the items (documents) and chunks of several knowledge bases at once, and their
    total.

    Args:
        knowledge_bases: The ids of the knowledge bases to count; all when omitted.
        content_query: Count only what contains these words (any of them).
    """
    kb = _kb()
    target = kb.target("count_items_or_chunks", knowledge_bases, ctx.scope)
    counts = kb.store.count(target, content_query)
    result = {c: {"items": items, "chunks": chunks} for c, (items, chunks) in counts.items()}
    if len(result) > 1 and "total" not in result:
        # Asked how many "altogether", the 1.5B answered "3 … and 2 …" without the sum.
        result["total"] = {
            "items": sum(items for items, _ in counts.values()),
            "chunks": sum(chunks for _, chunks in counts.values()),
        }
    return result


@tool
def save_search_results(
    ctx: ToolContext,
    query: str,
    knowledge_base: str,
    searchMethod: Literal["hybrid", "semantic", "keyword"] = "hybrid",
    limit: int = 50,
) -> dict[str, Any]:
    """Search ONE knowledge base and write the results, with their text, to a virtual file
    instead of returning them: scan it afterwards with grep, head, cat or wc.

    Args:
        query: What to look for, in the language of the user's question.
        knowledge_base: The id of the knowledge base (context) to search.
        searchMethod: "hybrid", "keyword" or "semantic".
        limit: How many chunks to save (1-200).
    """
    kb = _kb()
    target = kb.target("save_search_results", [knowledge_base], ctx.scope)
    hits = kb.search(query, target, method=searchMethod, limit=max(1, min(limit, 200)))
    files = files_of(ctx.artifacts)
    lines = []
    for h in hits:
        c = h.chunk
        lines.append(f"## [c{c.id}] {c.item_name} › {c.heading} (page {c.page}, {h.score:.4f})")
        lines.extend([*c.text.splitlines(), ""])
    number = len(files.paths()) + 1
    path = files.write(f"/results/{knowledge_base}/search_{number}.md", "\n".join(lines))
    found = _found(ctx, kb, hits, text=False)
    return {"file": path, "saved": len(hits), **found}


@tool
def vector_search(
    ctx: ToolContext, query: str, knowledge_bases: list[str] | None = None, limit: int = 10
) -> dict[str, Any]:
    """Semantic search (by meaning) over several knowledge bases at once.

    Args:
        query: What to look for.
        knowledge_bases: The ids of the knowledge bases; all when omitted.
        limit: How many chunks to return (1-50).
    """
    kb = _kb()
    target = kb.target("vector_search", knowledge_bases, ctx.scope)
    hits = kb.search(query, target, method="semantic", limit=max(1, min(limit, 50)))
    return _found(ctx, kb, hits, text=True)


@tool(split="|")
def wiki_search(ctx: ToolContext, query: str, limit: int = 5) -> dict[str, Any]:
    """Hybrid search over every knowledge base. Separate several queries with | to run
    them in parallel: <wiki_search>first query|second query</wiki_search>.

    Args:
        query: What to look for.
        limit: How many chunks to return per query (1-20).
    """
    kb = _kb()
    target = kb.target("wiki_search", None, ctx.scope)
    hits = kb.search(query, target, method="hybrid", limit=max(1, min(limit, 20)))
    return _found(ctx, kb, hits, text=True)


@tool
def retrieve_knowledge_graph(
    ctx: ToolContext, query: str, knowledge_bases: list[str] | None = None, limit: int = 30
) -> dict[str, Any]:
    """The part of the knowledge graph (entities and the relations between them, read from
    the documents) around the names in a query. Each relation cites its chunks.

    Args:
        query: Names of things (products, functions, options, people) to start from.
        knowledge_bases: The ids of the knowledge bases; all when omitted.
        limit: How many relations to return.
    """
    kb = _kb()
    target = kb.target("retrieve_knowledge_graph", knowledge_bases, ctx.scope)
    if any(items is not None for items in target.values()):
        msg = "the knowledge graph spans whole contexts; this run is scoped to some items only"
        raise ToolError(msg)
    return kb.subgraph(query, list(target), max(1, limit))


@tool
def get_more_content(
    ctx: ToolContext, context: str, item: str, page: int = 1, pages: int = 3
) -> dict[str, Any]:
    """Read the chunks of an item page by page, from `page` on.

    Args:
        context: The item's knowledge base.
        item: The item's id.
        page: The first page to read.
        pages: How many pages (1-10).
    """
    return _read(ctx, "get_more_content", context, item, page, max(1, min(pages, 10)))


@tool
def get_page_content(ctx: ToolContext, context: str, item: str, page: int) -> dict[str, Any]:
    """Read one page of an item.

    Args:
        context: The item's knowledge base.
        item: The item's id.
        page: The page.
    """
    return _read(ctx, "get_page_content", context, item, page, 1)


def _read(
    ctx: ToolContext, tool_name: str, context: str, item: str, page: int, pages: int
) -> dict[str, Any]:
    kb = _kb()
    kb.target(tool_name, [context], ctx.scope)
    if ctx.scope is not None and not ctx.scope.allows(context, item):
        msg = f"item {item!r} of {context!r} is outside this run's scope"
        raise ToolError(msg)
    record = kb.store.item(context, item)
    if record is None:
        msg = f"no item {item!r} in {context!r}: search_items_by_name lists the items"
        raise ToolError(msg)
    if not 1 <= page <= record.pages:
        msg = f"{context}/{item} has pages 1-{record.pages}; there is no page {page}"
        raise ToolError(msg)
    chunks = kb.store.pages(context, item, page, page + pages - 1)
    # Read, not ranked: score 0, so that a chunk a search also found keeps that score.
    records = [Hit(c, 0.0).record() for c in chunks]
    remember(ctx.artifacts, records)
    last = min(page + pages - 1, record.pages)
    return {
        "item": item,
        "item_name": record.name,
        "pages_read": [page, last],
        "pages": record.pages,
        "next_page": last + 1 if last < record.pages else None,
        "results": records,
    }


@tool(ends_run=True, cache=False)
def finish_retrieval(
    ctx: ToolContext, answer: str, sources: Annotated[list[ChunkId], Field(max_length=5)]
) -> str:
    """End the retrieval with the answer and the ids of the chunks it rests on.

    Args:
        answer: The answer, in the user's language.
        sources: The `chunk` ids of the results the answer rests on, most important first;
            empty only when no result holds it.
    """
    # Up to 5: the 1.5B, free to cite in its text, ran a list "[c12, c16, … c123," to its
    # token cap; a bounded list in the grammar cannot run on. No example ids in the docs: the
    # 1.5B cited an example's ["c12", "c31"] after a count that returned no chunk.
    return cited_answer(answer, ctx.artifacts, sources)
