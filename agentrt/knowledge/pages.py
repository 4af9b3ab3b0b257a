"""The session tools a search offers for the items it found.

A search that finds chunks of an item (or, by name, the item) offers, for the rest of the
session (the run, without one), `get_more_content_from_<item>` (read on from any page) and
`get_<item>_page_<n>_content`
for the pages around the hits, so that a follow-up reads adjacent pages without searching
again. They are session tools (`agentrt.sessions.store`): the workspace's `get_more_content` and
`get_page_content` with the context, the item and the page bound.

`<item>` is a slug of the item's id. Which slug stands for which item is kept in the run's (or
session's) artifacts, so that two items with the same slug get different names, and a tool
already offered is not offered again.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from agentrt.knowledge.search import Hit, KnowledgeBase
from agentrt.knowledge.store import ItemRecord
from agentrt.sessions.store import SessionTool
from agentrt.tool import ToolContext

__all__ = ["MORE_CONTENT_TOOL", "PAGE_CONTENT_TOOL", "offer_item_tools"]

MORE_CONTENT_TOOL = "get_more_content"
PAGE_CONTENT_TOOL = "get_page_content"

MAX_ITEMS = 3
"""Items per search that get tools: the best found; more would crowd the model's tool list."""
MAX_PAGES = 3
"""Page tools per item: the hits' pages and their neighbours, nearest the best hit first."""
_SLUGGING = threading.Lock()
_SLUG_CHARS = 36  # so that `get_<slug>_page_<n>_content` stays within a tool name's 64
_SLUGS = "knowledge.slugs"
_OFFERED = "knowledge.offered"


def offer_item_tools(
    ctx: ToolContext, kb: KnowledgeBase, found: Sequence[Hit | ItemRecord]
) -> list[str]:
    """Offer the tools for the items of what a search found, best first (a chunk counts for
    its page, an item for its first); the names of the tools newly offered."""
    items: dict[tuple[str, str], list[int]] = {}
    for thing in found:
        key, page = (
            ((thing.chunk.context, thing.chunk.item), thing.chunk.page)
            if isinstance(thing, Hit)
            else ((thing.context, thing.id), 1)
        )
        if key in items or len(items) < MAX_ITEMS:
            items.setdefault(key, []).append(page)
    offered: set[str] = ctx.artifacts.setdefault(_OFFERED, set())
    added: list[str] = []
    for (context, item), pages in items.items():
        record = kb.store.item(context, item)
        if record is None:  # removed by an ingest since the search
            continue
        slug = _slug(ctx, context, item)
        where = f"{record.name!r} ({context}/{item}, {record.pages} pages)"
        specs = [
            SessionTool(
                name=f"get_more_content_from_{slug}",
                description=f"Read more of {where}: the chunks of some pages from `page` on.",
                base=MORE_CONTENT_TOOL,
                bind={"context": context, "item": item},
            )
        ]
        best = pages[0]
        nearby = {p + d for p in pages for d in (-1, 0, 1)} & set(range(1, record.pages + 1))
        for page in sorted(nearby, key=lambda p: (abs(p - best), p))[:MAX_PAGES]:
            specs.append(
                SessionTool(
                    name=f"get_{slug}_page_{page}_content",
                    description=f"Read page {page} of {where}.",
                    base=PAGE_CONTENT_TOOL,
                    bind={"context": context, "item": item, "page": page},
                )
            )
        for spec in specs:
            if spec.name not in offered:
                ctx.add_session_tool(spec)
                offered.add(spec.name)
                added.append(spec.name)
    return added


def _slug(ctx: ToolContext, context: str, item: str) -> str:
    """The item's name in tool names: its id, lower-case, `_` for the rest; unique in the
    session."""
    with _SLUGGING:  # parallel searches (sync tools, one thread each) name items at once
        slugs: dict[str, str] = ctx.artifacts.setdefault(_SLUGS, {})
        global_id = f"{context}/{item}"
        for slug, owner in slugs.items():
            if owner == global_id:
                return slug
        stem = item.rsplit(".", 1)[0] if "." in item.rsplit("/", 1)[-1] else item
        base = re.sub(r"[^a-z0-9]+", "_", stem.lower()).strip("_")[:_SLUG_CHARS] or "item"
        if base[0].isdigit():
            base = f"item_{base}"[:_SLUG_CHARS]
        slug, n = base, 1
        while slug in slugs:
            n += 1
            slug = f"{base[: _SLUG_CHARS - len(str(n)) - 1]}_{n}"
        slugs[slug] = global_id
        return slug
