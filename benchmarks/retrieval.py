"""Tool retrieval: recall@k per query style on two sets, and narrowing latency at 3,000 tools.

    .venv/bin/python benchmarks/retrieval.py            # the whole table (about a minute)
    .venv/bin/python benchmarks/retrieval.py --quick    # a quarter of the queries, 600 tools
    .venv/bin/python benchmarks/retrieval.py --detail   # also recall per domain, and the misses
    .venv/bin/python benchmarks/retrieval.py --slice 8 --catalog 40   # the smoke test's size

    .venv/bin/python benchmarks/retrieval.py --heldout  # the docstring set's held-out half
    .venv/bin/python benchmarks/retrieval.py --public WHEEL  # and a public set (bfcl.py)

Everything goes through the project's own code: `load_embedder`, `ToolIndex.build`,
`ToolIndex.rank` (agentrt's hybrid retrieval), `ToolIndex.search` (dense alone),
`ToolIndex.lexical_search` (BM25 alone), `await ToolIndex.query` and `narrow`.

Query styles. Each rule of `RULES` ranks every query: dense and BM25 alone, reciprocal-rank
fusion and a fixed 50/50 blend of the two (over the same split parts, merged the same way), and
agentrt's hybrid. all@5 counts a query when every thing it asks for (each intent: any of its
acceptable tools) is among the first 5, any@5 when one is; all@10 likewise; MRR@10 is of the
first tool serving any intent. The labelled set gives `natural` (its queries) and `multi` (two of
its queries of different domains joined by "and then", ";", ", also", ". Then" or "plus").
The docstring set (data/retrieval_docstrings/, `--docstrings` for another folder) gives `short`,
`natural`, `multi` and `none`: its tuning half by default, its held-out half with `--heldout`,
run only for final numbers, never to choose a rule. The no-fit AUROC compares the bare top-1
cosine with agentrt's `fit` at telling served queries from unservable ones: the docstring set's
`none` queries, and for the labelled set its queries over a catalog without half its domains.
`--public` adds the Berkeley Function-Calling Leaderboard's questions over their pooled catalog
(`bfcl.py`: `single` and `parallel` calls, `none` for its irrelevance questions), never tuned on.

Recall. data/retrieval/ holds a labelled catalog written for this benchmark (tools/*.yaml, one
file per domain, with near-neighbours on purpose) and queries.yaml, each query with the one to
three tools that answer it. A query is a hit at k when any of its gold tools is among the k best
retrieved; MRR is the mean of 1/rank of the first gold tool (0 past rank 10). The same queries
are then run against the 3,000-tool catalog, where each labelled tool has per-vendor variants:
"exact" counts only the labelled tool, "with variants" also its variants (send_email_gmail for
send_email), which is the fairer reading when a catalog really has one tool per vendor.

Latency. The scale catalog is the labelled tools plus per-vendor variants with their own names
and reworded descriptions, generated here from a seed (not stored). Narrowing is timed per
query, with a strategy's realistic shape: 2-4 template tools, 2 safety tools, retrieve 8, cap
10. (a) is `search` + `narrow` given the query's vector, (b) is `await query` (embedding in a
worker thread, then search) + `narrow`: what a run pays. The query embedding alone is timed too,
so that (b) - (a) - embedding is the worker-thread hop. Both embed the question as new (the
embedder's query cache is cleared before each); the same question asked again, a cache hit, is
timed too, and (b) of each query when 8 arrive at once, which the embedder encodes in batches
(the first alone, the rest together while it ran). Times are per query, p50, p95 and p99, after
a warm-up; a shared 2-core machine moves them by tens of percent from one run to the next. The
same queries are then timed again with 2 background processes spinning a core each (started and
stopped here): the latency a loaded machine gives, whose target is a p50 of at most 40 ms for
the embedding.

Index build: cold embeds every document into an empty cache in a temporary directory; warm
builds the same registry again from that cache (it must embed nothing); then one tool's
description changes, and only that document is embedded again.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from rich.console import Console
from rich.table import Table

from agentrt.catalog.fusion import round_robin
from agentrt.catalog.index import DEPTH, ToolIndex, narrow
from agentrt.catalog.metadata import CapabilityMap, Registry, ToolMetadata
from agentrt.logs import configure_logging
from agentrt.vectors.embedder import Embedder, load_embedder

sys.path.insert(0, str(Path(__file__).parent))

import bfcl  # benchmarks/bfcl.py, found through the line above
from cpuload import busy  # benchmarks/cpuload.py, found through the line above

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DATA = Path(__file__).parent / "data" / "retrieval"

# A retrieving strategy's shape (`retrieve`, `max_tools`, `safety` and `tools` of a strategy's
# YAML; max_tools defaults to 10): what every timed narrowing uses.
RETRIEVE = 8
CAP = 10
SAFETY = ("web_search", "calculate")
TEMPLATE_SIZES = (2, 4)

TARGET_SEARCH_MS = 2.0
TARGET_WITH_EMBEDDING_MS = 30.0
TARGET_LOADED_EMBEDDING_MS = 40.0
BURST = 8
"""Queries that arrive at once, for the batching row."""
LOAD = 2
"""Background processes spinning a core each during the loaded pass."""
KS = (1, 5, 10)


@dataclass(frozen=True)
class Query:
    text: str
    gold: tuple[str, ...]


@dataclass(frozen=True)
class Labelled:
    capabilities: CapabilityMap
    tools: dict[str, ToolMetadata]
    domain: dict[str, str]
    """Tool name → its domain (the name of the file it is in)."""
    queries: list[Query]


def load_labelled(folder: Path = DATA) -> Labelled:
    """The labelled catalog and queries; ValueError for anything malformed (the smoke test runs
    this too)."""
    capabilities = CapabilityMap.model_validate(
        yaml.safe_load((folder / "capabilities.yaml").read_text(encoding="utf-8"))
    )
    tools: dict[str, ToolMetadata] = {}
    domain: dict[str, str] = {}
    for path in sorted((folder / "tools").glob("*.yaml")):
        for entry in yaml.safe_load(path.read_text(encoding="utf-8")):
            meta = ToolMetadata.model_validate(entry)
            if meta.name in tools:
                raise ValueError(f"{path}: {meta.name!r} is also in {domain[meta.name]}.yaml")
            unknown = [c for c in meta.capabilities if capabilities.resolve(c) is None]
            if unknown:
                raise ValueError(f"{path}: {meta.name!r} has unknown capabilities {unknown}")
            tools[meta.name] = meta
            domain[meta.name] = path.stem
    queries = []
    for entry in yaml.safe_load((folder / "queries.yaml").read_text(encoding="utf-8")):
        query = Query(text=entry["query"], gold=tuple(entry["gold"]))
        if not 1 <= len(query.gold) <= 3:
            raise ValueError(f"query {query.text!r}: {len(query.gold)} gold tools, not 1 to 3")
        missing = [g for g in query.gold if g not in tools]
        if missing:
            raise ValueError(f"query {query.text!r}: gold tools not in the catalog: {missing}")
        queries.append(query)
    texts = [q.text for q in queries]
    if len(set(texts)) != len(texts):
        raise ValueError("queries.yaml has the same query twice")
    return Labelled(capabilities, tools, domain, queries)


def sliced(labelled: Labelled, queries: int) -> Labelled:
    """The first `queries` queries and only the tools they name, with the safety set: small
    enough to embed in seconds, and still every row of the table."""
    kept = labelled.queries[:queries]
    names = {g for q in kept for g in q.gold} | set(SAFETY)
    return Labelled(
        labelled.capabilities,
        {n: m for n, m in labelled.tools.items() if n in names},
        {n: d for n, d in labelled.domain.items() if n in names},
        kept,
    )


# ── the scale catalog ────────────────────────────────────────────────────────────────────────

# Products a platform would have one integration per, by domain: each labelled tool gets
# variants named after some of them (send_email → send_email_gmail, send_email_outlook, …).
# fmt: off
VENDORS: dict[str, tuple[str, ...]] = {
    "data": ("pandas", "Polars", "DuckDB", "Spark", "Snowflake", "BigQuery", "Databricks",
             "Redshift", "Excel Online", "Airtable", "ClickHouse", "Dask"),
    "charts": ("Matplotlib", "Plotly", "Vega", "Tableau", "Looker", "Power BI", "Grafana",
               "Superset", "Metabase", "Datawrapper", "ECharts"),
    "files": ("Dropbox", "Google Drive", "OneDrive", "Box", "SharePoint", "Nextcloud", "SFTP",
              "iCloud Drive", "Egnyte", "Synology", "S3"),
    "documents": ("Adobe Acrobat", "DocuSign", "Google Docs", "Word Online", "PandaDoc",
                  "Smallpdf", "iLovePDF", "Foxit", "Notion", "Confluence", "Quip"),
    "web": ("Google", "Bing", "DuckDuckGo", "Brave", "SerpAPI", "Firecrawl", "ScrapingBee",
            "Apify", "Browserless", "Diffbot", "Exa"),
    "email": ("Gmail", "Outlook", "Fastmail", "Proton Mail", "Zoho Mail", "Yahoo Mail",
              "iCloud Mail", "Exchange", "SendGrid", "Mailgun", "Postmark"),
    "calendar": ("Google Calendar", "Outlook Calendar", "Apple Calendar", "Calendly",
                 "Zoho Calendar", "Fantastical", "Exchange Calendar", "Cal.com", "Teamup",
                 "Robin", "Envoy"),
    "messaging": ("Slack", "Microsoft Teams", "Discord", "Mattermost", "Google Chat",
                  "Rocket.Chat", "Telegram", "Twilio", "Webex", "Zulip", "Zoom"),
    "crm": ("Salesforce", "HubSpot", "Pipedrive", "Zoho CRM", "Dynamics 365", "Freshsales",
            "Copper", "Close", "Insightly", "Attio", "monday CRM"),
    "support": ("Zendesk", "Freshdesk", "Intercom", "Help Scout", "Jira Service Management",
                "ServiceNow", "Front", "Kayako", "Gorgias", "HubSpot Service Hub", "Zoho Desk"),
    "databases": ("PostgreSQL", "MySQL", "SQL Server", "Oracle", "SQLite", "MariaDB",
                  "Snowflake", "BigQuery", "Redshift", "CockroachDB", "Aurora"),
    "math": ("Wolfram Alpha", "SymPy", "NumPy", "math.js", "Desmos", "GeoGebra", "Maxima",
             "Octave", "SciPy", "Mathematica", "Maple"),
    "datetime": ("IANA tz", "timeanddate", "WorldTimeAPI", "Nager.Date", "Calendarific",
                 "dateutil", "Pendulum", "Moment", "Luxon", "Arrow", "ICU"),
    "text": ("DeepL", "Google Translate", "Azure Translator", "AWS Comprehend", "OpenAI",
             "Cohere", "Grammarly", "LanguageTool", "spaCy", "Hugging Face", "Watson NLU"),
    "images": ("Cloudinary", "imgix", "Photoshop", "Canva", "remove.bg", "Stability AI",
               "DALL-E", "Google Vision", "Rekognition", "Azure Vision", "ImageMagick"),
    "media": ("Whisper", "AssemblyAI", "Deepgram", "ElevenLabs", "Polly", "FFmpeg", "Descript",
              "Rev", "Otter", "Shazam", "Premiere Pro"),
    "finance": ("Stripe", "QuickBooks", "Xero", "Plaid", "Wise", "Revolut", "Bloomberg",
                "Yahoo Finance", "Alpha Vantage", "Coinbase", "Sage", "FreshBooks"),
    "weather": ("OpenWeather", "WeatherAPI", "AccuWeather", "Tomorrow.io", "Meteomatics",
                "NOAA", "Met Office", "Meteo-France", "DWD", "Visual Crossing", "Windy"),
    "maps": ("Google Maps", "Mapbox", "HERE", "OpenStreetMap", "TomTom", "Apple Maps",
             "Bing Maps", "Waze", "Citymapper", "GeoNames", "Esri"),
    "devops": ("AWS", "Google Cloud", "Azure", "DigitalOcean", "Hetzner", "Linode",
               "Cloudflare", "Datadog", "PagerDuty", "Opsgenie", "Heroku", "Vercel"),
    "code": ("GitHub", "GitLab", "Bitbucket", "Azure DevOps", "Gitea", "Jira", "Linear",
             "CircleCI", "Jenkins", "Sourcegraph", "Codeberg"),
    "hr": ("Workday", "BambooHR", "Personio", "HiBob", "Rippling", "Gusto", "ADP",
           "Greenhouse", "Lever", "Deel", "SuccessFactors"),
    "ecommerce": ("Shopify", "WooCommerce", "Magento", "BigCommerce", "Amazon Seller Central",
                  "Etsy", "eBay", "Squarespace", "Wix", "PrestaShop", "ShipStation"),
    "travel": ("Amadeus", "Sabre", "Expedia", "Booking.com", "Skyscanner", "Kayak", "Airbnb",
               "Trainline", "Hertz", "Sixt", "TripAdvisor", "OpenTable"),
    "health": ("Fitbit", "Garmin", "Apple Health", "Google Fit", "Oura", "Whoop", "Withings",
               "Strava", "MyFitnessPal", "Polar", "Dexcom"),
    "tasks": ("Todoist", "Asana", "Trello", "Notion", "Evernote", "OneNote", "ClickUp",
              "monday.com", "Jira", "Things", "Microsoft To Do"),
    "social": ("X", "LinkedIn", "Instagram", "Facebook", "TikTok", "YouTube", "Mastodon",
               "Threads", "Pinterest", "Reddit", "Hootsuite", "Buffer"),
    "security": ("Okta", "Entra ID", "Google Workspace", "Auth0", "OneLogin", "JumpCloud",
                 "HashiCorp Vault", "1Password", "AWS IAM", "Keycloak", "Have I Been Pwned"),
    "smarthome": ("Philips Hue", "Nest", "ecobee", "Home Assistant", "SmartThings", "Alexa",
                  "Google Home", "Ring", "August", "Sonos", "Kasa", "Roomba"),
    "knowledge": ("Wikipedia", "Merriam-Webster", "Oxford", "Wiktionary", "Britannica",
                  "Reuters", "AP News", "Semantic Scholar", "Crossref", "ESPN", "Allrecipes"),
}
# fmt: on

# The opening verbs of the labelled descriptions, and other ways to say them: variants must not
# be the labelled text plus a vendor's name, or the scale catalog would be easier than a real one.
_SYNONYMS = {
    "List": ("Show", "Enumerate", "Return"),
    "Find": ("Look up", "Locate", "Search for"),
    "Search": ("Query", "Look through"),
    "Create": ("Make", "Set up", "Add"),
    "Send": ("Deliver", "Dispatch"),
    "Read": ("Get", "Load", "Fetch"),
    "Add": ("Insert", "Append"),
    "Record": ("Log", "Save", "Store"),
    "Convert": ("Transform", "Change"),
    "Draw": ("Render", "Plot", "Chart"),
    "Start": ("Begin", "Launch", "Kick off"),
    "Set": ("Change", "Configure"),
    "Check": ("Verify", "Test"),
    "Get": ("Fetch", "Retrieve"),
    "The": ("Returns the", "Reports the", "Gives the"),
}
_FRAMES = (
    "{text} Uses {vendor}.",
    "{vendor} integration. {text}",
    "{text} For {vendor} accounts.",
    "On {vendor}: {text}",
    "{text} Works through the {vendor} API.",
    "{vendor} connector. {text}",
)


def _slug(vendor: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", vendor.lower()).strip("_")


def _reword(description: str, vendor: str, rng: random.Random) -> str:
    first, _, rest = description.partition(" ")
    if first in _SYNONYMS and rng.random() < 0.7:
        description = f"{rng.choice(_SYNONYMS[first])} {rest}"
    return rng.choice(_FRAMES).format(text=description, vendor=vendor)


def scale_catalog(
    labelled: Labelled, size: int, seed: int
) -> tuple[dict[str, ToolMetadata], dict[str, str]]:
    """A `size`-tool catalog: the labelled tools, then per-vendor variants of each in turn (round
    robin, so that every tool gets about as many) until there are `size`. Deterministic for a
    seed. Also each tool's labelled tool: itself, or the one it is a variant of."""
    rng = random.Random(seed)
    tools = {name: (meta, name) for name, meta in labelled.tools.items()}
    # Each tool's vendors in its own random order: round r gives every tool its r-th vendor.
    order = {
        name: rng.sample(VENDORS[labelled.domain[name]], len(VENDORS[labelled.domain[name]]))
        for name in sorted(labelled.tools)
    }
    for round_ in range(max(len(v) for v in order.values())):
        for name, vendors in order.items():
            if len(tools) >= size:
                return _split(tools)
            if round_ >= len(vendors):
                continue
            vendor = vendors[round_]
            base = labelled.tools[name]
            variant = f"{name}_{_slug(vendor)}"
            if variant in tools:
                continue
            tools[variant] = (
                base.model_copy(
                    update={
                        "name": variant,
                        "description": _reword(base.description, vendor, rng),
                        "params": [*base.params, "account"],
                        "tags": [*base.tags, _slug(vendor)],
                    }
                ),
                name,
            )
    if len(tools) < size:
        raise ValueError(f"only {len(tools)} tools can be generated, not {size}")
    return _split(tools)


def _split(
    tools: dict[str, tuple[ToolMetadata, str]],
) -> tuple[dict[str, ToolMetadata], dict[str, str]]:
    return {n: m for n, (m, _) in tools.items()}, {n: b for n, (_, b) in tools.items()}


# ── query styles: dense, BM25 and fusion rules side by side ───────────────────────────────────

DOCSTRINGS = Path(__file__).parent / "data" / "retrieval_docstrings"
STYLES = ("short", "natural", "multi", "single", "parallel", "none")
RULES = ("dense", "bm25", "rrf", "weighted", "hybrid")
"""dense and bm25 rank the whole query, as one; rrf (k=60) and weighted (0.5/0.5 of min-max
normalised scores) fuse them per part of the split query, as hybrid does; hybrid is agentrt's
own (`ToolIndex.rank`): BM25 weighted by the query's lexical coverage, near-duplicates
collapsed."""
JOINS = (" and then ", "; ", ", also ", ". Then ", " plus ")
"""How the constructed multi-intent queries of the labelled set join their two requests."""
RRF_K = 60


@dataclass(frozen=True)
class Styled:
    text: str
    style: str
    intents: tuple[tuple[str, ...], ...]
    """Per thing asked for, the tools any one of which serves it; none for a `none` query."""


def styled_labelled(labelled: Labelled, pairs: int, seed: int) -> list[Styled]:
    """The labelled set as styles: each query `natural` (one intent, its gold), and `pairs`
    `multi` queries, two queries of different domains joined as a user would."""
    rng = random.Random(seed)
    out = [Styled(q.text, "natural", (q.gold,)) for q in labelled.queries]
    # Of different domains when the set has several (a slice may have one).
    several = len({labelled.domain[q.gold[0]] for q in labelled.queries}) > 1
    while len(out) < len(labelled.queries) + pairs:
        a, b = rng.sample(labelled.queries, 2)
        if labelled.domain[a.gold[0]] != labelled.domain[b.gold[0]] or not several:
            out.append(Styled(a.text + rng.choice(JOINS) + b.text, "multi", (a.gold, b.gold)))
    return out


def load_docstrings(folder: Path, heldout: bool) -> tuple[dict[str, ToolMetadata], list[Styled]]:
    """The docstring set: its catalog, and its tuning half (or, with `heldout`, the held-out
    half, run only for the final numbers)."""
    tools = {
        entry["name"]: ToolMetadata.model_validate(entry)
        for entry in yaml.safe_load((folder / "catalog.yaml").read_text(encoding="utf-8"))
    }
    half = "heldout.yaml" if heldout else "tuning.yaml"
    queries = [
        Styled(e["query"], e["style"], tuple(tuple(i) for i in e["intents"]))
        for e in yaml.safe_load((folder / half).read_text(encoding="utf-8"))
    ]
    return tools, queries


Ranked = list[tuple[str, list[str]]]
"""The first ten tools, each with the near-duplicates it stands for."""


class Rankers:
    """Every rule of `RULES` over one index, the query vectors embedded once for all."""

    def __init__(self, index: ToolIndex, texts: Sequence[str]) -> None:
        self.index = index
        embedder = index.embedder
        parts = list(dict.fromkeys([*texts, *index.parts(texts)]))
        vectors = embedder.encode([embedder.query_instruction + p for p in parts])
        self.vector = dict(zip(parts, vectors, strict=True))

    def rank(self, rule: str, text: str) -> Ranked:
        index = self.index
        if rule == "hybrid":
            parts = index.parts([text])
            found = index.rank(parts, numpy_rows([self.vector[p] for p in parts]), max(KS))
            return [(n, found.duplicates.get(n, [])) for n, _ in found.tools]
        if rule == "dense":
            return [(n, []) for n, _ in index.search(self.vector[text], max(KS))]
        if rule == "bm25":
            return [(n, []) for n, _ in index.lexical_search(text, max(KS))]
        # The clauses first, the whole query last, merged as `ToolIndex.rank` merges them.
        rankings = [self._fused(rule, part) for part in index.parts([text])]
        return [(n, []) for n, _ in round_robin(rankings)[: max(KS)]]

    def _fused(self, rule: str, part: str) -> list[tuple[str, float]]:
        dense = self.index.search(self.vector[part], DEPTH)
        lexical = self.index.lexical_search(part, DEPTH)
        if rule == "weighted":
            return fuse_weighted(dense, lexical, 0.5)
        scores: dict[str, float] = defaultdict(float)
        for ranking in (dense, lexical):
            for rank, (name, _) in enumerate(ranking):
                scores[name] += 1 / (RRF_K + rank)
        return sorted(scores.items(), key=lambda item: -item[1])


def numpy_rows(vectors: Sequence[npt.NDArray[np.float32]]) -> npt.NDArray[np.float32]:
    import numpy as np

    return np.stack(vectors)


def fuse_weighted(
    dense: list[tuple[str, float]], lexical: list[tuple[str, float]], weight: float
) -> list[tuple[str, float]]:
    """A fixed blend: `weight` × min-max dense + (1 - `weight`) × min-max BM25."""

    def scaled(ranking: list[tuple[str, float]]) -> dict[str, float]:
        if not ranking:
            return {}
        high, low = ranking[0][1], ranking[-1][1]
        return {n: (s - low) / (high - low) if high > low else 1.0 for n, s in ranking}

    d, lex = scaled(dense), scaled(lexical)
    blend = {n: weight * d.get(n, 0.0) + (1 - weight) * lex.get(n, 0.0) for n in d.keys() | lex}
    return sorted(blend.items(), key=lambda item: -item[1])


@dataclass
class StyleScores:
    queries: int
    all5: float
    any5: float
    all10: float
    mrr: float


def style_scores(
    rankers: Rankers, rule: str, queries: Sequence[Styled], family: Callable[[str], str]
) -> dict[str, StyleScores]:
    """all@5 (every intent has a serving tool in the first 5), any@5, all@10 and MRR@10 (of
    the first tool serving any intent), per style; a tool counts for itself, its family
    (`family`) and the near-duplicates it stands for."""
    per: dict[str, list[tuple[bool, bool, bool, float]]] = defaultdict(list)
    for query in queries:
        if not query.intents:
            continue
        ranked = rankers.rank(rule, query.text)
        covers = [{family(n), *(family(d) for d in dups)} for n, dups in ranked]

        def hit(k: int, intent: tuple[str, ...], covers: list[set[str]] = covers) -> bool:
            return any(c & set(intent) for c in covers[:k])

        first = next(
            (i + 1 for i, c in enumerate(covers) if any(c & set(x) for x in query.intents)), None
        )
        per[query.style].append(
            (
                all(hit(5, i) for i in query.intents),
                any(hit(5, i) for i in query.intents),
                all(hit(10, i) for i in query.intents),
                1 / first if first else 0.0,
            )
        )
    return {
        style: StyleScores(len(rows), *(sum(r[j] for r in rows) / len(rows) for j in range(4)))
        for style, rows in per.items()
    }


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """The chance a random positive scores above a random negative (ties count half)."""
    if not positive or not negative:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def no_fit_auroc(rankers: Rankers, fits: Sequence[Styled]) -> tuple[float, float, int, int]:
    """How well the dense top-1 cosine and agentrt's fit tell the queries some tool serves from
    those none does (`none` style): AUROC of each, and the two counts."""
    top1: dict[bool, list[float]] = {True: [], False: []}
    fit: dict[bool, list[float]] = {True: [], False: []}
    index = rankers.index
    for query in fits:
        served = bool(query.intents)
        dense = index.search(rankers.vector[query.text], 1)
        top1[served].append(dense[0][1] if dense else 0.0)
        parts = index.parts([query.text])
        found = index.rank(parts, numpy_rows([rankers.vector[p] for p in parts]), 1)
        fit[served].append(found.fit or 0.0)
    return (
        auroc(top1[True], top1[False]),
        auroc(fit[True], fit[False]),
        len(top1[True]),
        len(top1[False]),
    )


def held_out_domains(labelled: Labelled, seed: int) -> tuple[Registry, list[Styled]]:
    """A no-fit test from the labelled set: the catalog without half of its domains, and every
    query, those of a removed domain then served by no tool (`none`)."""
    domains = sorted(set(labelled.domain.values()))
    kept = set(random.Random(seed).sample(domains, len(domains) // 2))
    tools = {n: m for n, m in labelled.tools.items() if labelled.domain[n] in kept}
    queries = [
        Styled(q.text, "natural", (q.gold,))
        if labelled.domain[q.gold[0]] in kept
        else Styled(q.text, "none", ())
        for q in labelled.queries
    ]
    return Registry(tools, labelled.capabilities), queries


def style_table(
    title: str, results: dict[str, dict[str, StyleScores]], auc: tuple[float, float, int, int]
) -> Table:
    """One row per style and rule; the best all@5 of each style marked, and hybrid's lead over
    the better of dense and BM25."""
    table = Table(title=title)
    for col in ("style", "rule", "queries", "all@5", "any@5", "all@10", "MRR@10", "note"):
        table.add_column(col, justify="left" if col in ("style", "rule", "note") else "right")
    for style in STYLES:
        rows = {rule: results[rule][style] for rule in RULES if style in results[rule]}
        if not rows:
            continue
        best = max(r.all5 for r in rows.values())
        baseline = max(rows["dense"].all5, rows["bm25"].all5)
        for rule, r in rows.items():
            note = "best" if r.all5 == best else ""
            if rule == "hybrid":
                lead = (r.all5 - baseline) * 100
                note += f"{' · ' if note else ''}{lead:+.1f} pts over max(dense, BM25)"
            table.add_row(
                style, rule, str(r.queries), f"{r.all5:.3f}", f"{r.any5:.3f}",
                f"{r.all10:.3f}", f"{r.mrr:.3f}", note,
            )  # fmt: skip
        table.add_section()
    table.add_row(
        "none",
        "no-fit AUROC",
        f"{auc[2]}+{auc[3]}",
        "",
        "",
        "",
        "",
        f"dense top-1 cosine {auc[0]:.3f} · agentrt's fit {auc[1]:.3f}",
    )
    return table


def compare_styles(
    index: ToolIndex,
    queries: Sequence[Styled],
    fit_index: ToolIndex,
    fits: Sequence[Styled],
    title: str,
) -> Table:
    """Every rule on every style of `queries`, and the no-fit AUROC of `fits` on `fit_index`."""
    rankers = Rankers(index, [q.text for q in queries])
    results = {rule: style_scores(rankers, rule, queries, lambda n: n) for rule in RULES}
    fit_rankers = rankers if fit_index is index else Rankers(fit_index, [q.text for q in fits])
    return style_table(title, results, no_fit_auroc(fit_rankers, fits))


def bare_registry(tools: dict[str, ToolMetadata]) -> Registry:
    """A catalog of tools that declare no capabilities (docstrings, MCP-like schemas)."""
    return Registry(tools, CapabilityMap(version=1, capabilities={}, core=[], requirements={}))


def load_public(source: Path) -> tuple[dict[str, ToolMetadata], list[Styled]]:
    """The public set (`bfcl.py`): its pooled catalog, and its questions as query styles, each
    tool a call makes an intent of its own."""
    tools, questions = bfcl.load(source)
    return tools, [
        Styled(text, style, tuple((n,) for n in calls)) for text, style, calls in questions
    ]


def public_table(source: Path, embedder: Embedder) -> Table:
    """Every rule on the public set's styles, and its no-fit AUROC."""
    tools, queries = load_public(source)
    index = ToolIndex.build(bare_registry(tools), embedder, cache=None)
    return compare_styles(
        index,
        queries,
        index,
        queries,
        f"public set (BFCL {bfcl.VERSION}, never tuned on), {len(tools):,} pooled tools: "
        f"{len(queries):,} questions",
    )


# ── measurements ─────────────────────────────────────────────────────────────────────────────


@dataclass
class Recall:
    queries: int
    at: dict[int, float]
    mrr: float
    ranks: list[int | None]
    """Per query, the 1-based rank of its first gold tool within the top 10 (None: not there)."""
    top: list[list[str]]


def recall(
    tops: Sequence[list[str]],
    queries: Sequence[Query],
    family: Callable[[str], str] = lambda name: name,
) -> Recall:
    """recall@k and MRR@10 of the rankings `tops` (one per query, best first); a retrieved tool
    counts for the gold tool `family(tool)`."""
    ranks: list[int | None] = []
    for query, top in zip(queries, tops, strict=True):
        hit = next((i + 1 for i, name in enumerate(top) if family(name) in query.gold), None)
        ranks.append(hit)
    n = len(queries)
    return Recall(
        queries=n,
        at={k: sum(r is not None and r <= k for r in ranks) / n for k in KS},
        mrr=sum(1 / r for r in ranks if r is not None) / n,
        ranks=ranks,
        top=list(tops),
    )


def dense_tops(index: ToolIndex, vectors: npt.NDArray[np.float32]) -> list[list[str]]:
    # One query per call: `search` merges the rows it is given into one result.
    return [[name for name, _ in index.search(vector, max(KS))] for vector in vectors]


def hybrid_tops(rankers: Rankers, queries: Sequence[Query]) -> list[list[str]]:
    return [[name for name, _ in rankers.rank("hybrid", q.text)] for q in queries]


def percentiles(seconds: Sequence[float]) -> tuple[float, float, float]:
    """p50, p95 and p99 in milliseconds."""
    cuts = statistics.quantiles(seconds, n=100, method="inclusive")
    return statistics.median(seconds) * 1000, cuts[94] * 1000, cuts[98] * 1000


def templates(names: Sequence[str], count: int, seed: int) -> list[list[str]]:
    """A strategy's template per query: 2-4 tools of the catalog, none of them a safety tool."""
    rng = random.Random(seed)
    pool = [n for n in names if n not in SAFETY]
    return [rng.sample(pool, rng.randint(*TEMPLATE_SIZES)) for _ in range(count)]


@dataclass
class Timings:
    """Seconds per query of each timed path."""

    search: list[float]
    """(a) `rank` + `narrow`, the vectors of the query's parts given: ranking alone."""
    query: list[float]
    """(b) `await query` (embedding in a worker thread, then `rank`) + `narrow`."""
    embedding: list[float]
    """`Embedder.encode` of the query alone, in this thread."""
    cached: list[float]
    """`Embedder.encode` of the same query again: a cache hit."""
    burst: list[float]
    """(b) of each query when `BURST` of them arrive at once: the embedder batches them."""


async def time_narrowing(
    rankers: Rankers, texts: Sequence[str], template: list[list[str]], warmup: int
) -> Timings:
    """Each query through the three paths in turn: a shared machine's load drifts over a run,
    and interleaving lets every path see the same moments of it."""
    index = rankers.index
    instruction = index.embedder.query_instruction
    parts = [index.parts([text]) for text in texts]
    vectors = [numpy_rows([rankers.vector[p] for p in ps]) for ps in parts]
    # The warm-up starts the worker-thread pool and torch's kernels: a server pays that once.
    for text in texts[:warmup]:
        await index.query([text], RETRIEVE)
    timings = Timings([], [], [], [], [])
    embedder = index.embedder
    for text, part, vector, tools in zip(texts, parts, vectors, template, strict=True):
        t0 = time.perf_counter()
        found = index.rank(part, vector, RETRIEVE)
        narrow(template=tools, retrieved=found.tools, safety=SAFETY, cap=CAP)
        timings.search.append(time.perf_counter() - t0)

        embedder.clear_cache()
        t0 = time.perf_counter()
        found = await index.query([text], RETRIEVE)
        narrow(template=tools, retrieved=found.tools, safety=SAFETY, cap=CAP)
        timings.query.append(time.perf_counter() - t0)

        embedder.clear_cache()
        t0 = time.perf_counter()
        embedder.encode([instruction + text])
        timings.embedding.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        embedder.encode([instruction + text])
        timings.cached.append(time.perf_counter() - t0)

    async def one(text: str) -> None:
        t0 = time.perf_counter()
        await index.query([text], RETRIEVE)
        timings.burst.append(time.perf_counter() - t0)

    for start in range(0, len(texts) - BURST + 1, BURST):
        embedder.clear_cache()
        await asyncio.gather(*(one(text) for text in texts[start : start + BURST]))
    return timings


@dataclass
class Build:
    seconds: float
    embedded: int


def timed_build(registry: Registry, embedder: Embedder, cache: Path | None) -> Build:
    t0 = time.perf_counter()
    index = ToolIndex.build(registry, embedder, cache)
    return Build(time.perf_counter() - t0, index.embedded)


# ── the table ────────────────────────────────────────────────────────────────────────────────


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a quarter of the queries and a 600-tool catalog: a smoke check, not numbers",
    )
    parser.add_argument("--catalog", type=int, help="tools in the scale catalog (default 3,000)")
    parser.add_argument(
        "--slice",
        type=int,
        metavar="N",
        help="only the first N queries and the tools they name: a smoke check, not numbers",
    )
    parser.add_argument("--seed", type=int, default=4, help="seed of the scale catalog")
    parser.add_argument(
        "--detail", action="store_true", help="also recall per domain, and every miss at 5"
    )
    parser.add_argument(
        "--docstrings",
        type=Path,
        default=DOCSTRINGS,
        help="the docstring set's folder (catalog.yaml, tuning.yaml, heldout.yaml)",
    )
    parser.add_argument(
        "--heldout",
        action="store_true",
        help="the docstring set's held-out half instead of its tuning half: final numbers only",
    )
    parser.add_argument(
        "--torch-threads",
        type=int,
        help="torch's intra-op threads for indexing (default: torch's own choice, as agentrt "
        "leaves it; queries run on 1 whatever this says, as agentrt sets them)",
    )
    parser.add_argument(
        "--public",
        type=Path,
        metavar="WHEEL",
        help="also the public set: the bfcl-eval wheel from PyPI, or its bfcl_eval/data folder "
        "(see benchmarks/bfcl.py)",
    )
    args = parser.parse_args()
    import torch  # here, not above: the smoke test imports this module for its data alone

    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    size = args.catalog or (600 if args.quick else 3000)
    # The library logs to stdout unless told otherwise; the table is stdout.
    configure_logging(logging.WARNING, json=False)

    # Piped, rich would wrap the table at 80 columns.
    console = Console() if Console().is_terminal else Console(width=110)
    labelled = load_labelled()
    if args.slice:
        labelled = sliced(labelled, args.slice)
    queries = labelled.queries[::4] if args.quick else labelled.queries
    texts = [q.text for q in queries]
    warmup = 5 if args.quick else 20

    with console.status("loading the embedding model"):
        embedder = load_embedder()
    instruction = embedder.query_instruction
    # The labelled tools are embedded once: the no-fit catalog (half of them) reads them from
    # this cache.
    with tempfile.TemporaryDirectory() as shared:
        with console.status(f"recall on {len(labelled.tools)} labelled tools"):
            vectors = embedder.encode([instruction + t for t in texts])
            small = ToolIndex.build(
                Registry(labelled.tools, labelled.capabilities), embedder, cache=Path(shared)
            )
            labelled_recall = recall(dense_tops(small, vectors), queries)
            labelled_hybrid = recall(hybrid_tops(Rankers(small, texts), queries), queries)
        with console.status("query styles on the labelled set"):
            subset = replace(labelled, queries=queries)
            styled = styled_labelled(subset, pairs=max(4, len(queries) // 4), seed=args.seed)
            fit_registry, fits = held_out_domains(subset, args.seed)
            labelled_styles = compare_styles(
                small,
                styled,
                ToolIndex.build(fit_registry, embedder, cache=Path(shared)),
                fits,
                f"labelled set, {len(labelled.tools)} tools: natural queries, and multi-intent "
                "ones made of two; no-fit: half the domains' tools removed, their queries served "
                "by none",
            )
    docstring_styles = None
    if (args.docstrings / "catalog.yaml").is_file():
        with console.status("query styles on the docstring set"):
            ds_tools, ds_queries = load_docstrings(args.docstrings, args.heldout)
            ds_index = ToolIndex.build(bare_registry(ds_tools), embedder, cache=None)
            half = "HELD-OUT half" if args.heldout else "tuning half"
            docstring_styles = compare_styles(
                ds_index,
                ds_queries,
                ds_index,
                ds_queries,
                f"docstring set, {len(ds_tools)} tools, {half}: {len(ds_queries)} queries",
            )

    public_styles = None
    if args.public is not None:
        with console.status("query styles on the public set"):
            public_styles = public_table(args.public, embedder)

    tools, variant_of = scale_catalog(labelled, size, args.seed)
    registry = Registry(tools, labelled.capabilities)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        with console.status(f"building the {size:,}-tool index (cold: embedding every tool)"):
            cold = timed_build(registry, embedder, cache)
        warm = timed_build(registry, embedder, cache)
        # One description edited, as a registry change would: only that document is new.
        changed_tools = dict(registry.tools)
        first = sorted(changed_tools)[0]
        changed_tools[first] = changed_tools[first].model_copy(
            update={"description": changed_tools[first].description + " Now faster."}
        )
        changed = timed_build(Registry(changed_tools, labelled.capabilities), embedder, cache)
        index = ToolIndex.build(registry, embedder, cache)

    scale_rankers = Rankers(index, texts)
    exact = recall(dense_tops(index, vectors), queries)
    family = recall(dense_tops(index, vectors), queries, family=variant_of.__getitem__)
    hybrid_exact = recall(hybrid_tops(scale_rankers, queries), queries)
    hybrid_family = recall(
        hybrid_tops(scale_rankers, queries), queries, family=variant_of.__getitem__
    )
    plan = templates(index.names, len(queries), args.seed)
    with console.status(f"timing narrowing over {len(queries)} queries"):
        timings = asyncio.run(time_narrowing(scale_rankers, texts, plan, warmup))
    with (
        console.status(f"timing them again with {LOAD} processes spinning a core each"),
        busy(LOAD),
    ):
        loaded = asyncio.run(time_narrowing(scale_rankers, texts, plan, min(warmup, 5)))

    domains = sorted(set(labelled.domain.values()))
    table = Table(
        title=f"agentrt tool retrieval: {size:,} tools · retrieve {RETRIEVE} · cap {CAP} · "
        f"{len(SAFETY)} safety · 2-4 template"
    )
    for col in ("measure", "value", "target", "detail"):
        table.add_column(col, justify="left" if col in ("measure", "detail") else "right")

    table.add_row(
        "labelled set",
        f"{len(queries)} queries",
        "",
        f"{len(labelled.tools)} tools, {len(domains)} domains"
        + (" (--quick: every 4th query)" if args.quick else "")
        + (f" (--slice {args.slice})" if args.slice else ""),
    )
    for k in KS:
        table.add_row(
            f"recall@{k}", f"{labelled_hybrid.at[k]:.3f}", "", f"dense {labelled_recall.at[k]:.3f}"
        )
    table.add_row("MRR@10", f"{labelled_hybrid.mrr:.3f}", "", f"dense {labelled_recall.mrr:.3f}")
    for k in (1, 5):
        table.add_row(
            f"recall@{k}, {size:,} tools",
            f"{hybrid_exact.at[k]:.3f}",
            "",
            f"exact; {hybrid_family.at[k]:.3f} with variants; dense {exact.at[k]:.3f} "
            f"and {family.at[k]:.3f}",
        )
    table.add_section()

    def latency(label: str, times: list[float], target: float | None, detail: str) -> None:
        p50, p95, p99 = percentiles(times)
        mark = "" if target is None else (" ✓" if p50 <= target else " ✗")
        table.add_row(
            f"{label}, p50",
            f"{p50:.2f} ms",
            f"≤ {target:g} ms{mark}" if target is not None else "",
            f"{len(times)} queries, {detail}",
        )
        table.add_row(f"{label}, p95", f"{p95:.2f} ms", "", "")
        table.add_row(f"{label}, p99", f"{p99:.2f} ms", "", "")

    latency("(a) rank + narrow", timings.search, TARGET_SEARCH_MS, "vectors given")
    latency("(b) embed + rank + narrow", timings.query, TARGET_WITH_EMBEDDING_MS, "await query")
    latency("    the embedding alone", timings.embedding, None, "Embedder.encode")
    latency("    the same query again", timings.cached, None, "Embedder.encode, cached")
    latency(f"(b) {BURST} queries at once", timings.burst, None, "each query's, batched")
    table.add_section()
    spinning = f"{LOAD} processes spinning a core each"
    latency(f"(b) {LOAD} busy", loaded.query, None, f"await query, {spinning}")
    latency(f"(b) {BURST} at once, {LOAD} busy", loaded.burst, None, "each query's, batched")
    latency(
        f"    the embedding alone, {LOAD} busy",
        loaded.embedding,
        TARGET_LOADED_EMBEDDING_MS,
        f"Embedder.encode, {spinning}",
    )
    table.add_section()
    table.add_row("index build, cold", f"{cold.seconds:.1f} s", "", f"embedded {cold.embedded:,}")
    table.add_row(
        "    warm (disk cache)",
        f"{warm.seconds * 1000:.0f} ms",
        "embeds 0" + (" ✓" if warm.embedded == 0 else " ✗"),
        f"embedded {warm.embedded}",
    )
    table.add_row(
        "    one description changed",
        f"{changed.seconds * 1000:.0f} ms",
        "embeds 1" + (" ✓" if changed.embedded == 1 else " ✗"),
        f"embedded {changed.embedded}",
    )
    threads = f"torch threads {torch.get_num_threads()} (queries 1)"
    table.add_row(
        "embedding model", f"{embedder.dimension} dims", "", f"{embedder.name}, {threads}"
    )
    console.print(table)
    console.print(labelled_styles)
    if docstring_styles is not None:
        console.print(docstring_styles)
    if public_styles is not None:
        console.print(public_styles)
    else:
        console.print(f"(no docstring set in {args.docstrings})")

    if args.detail:
        print_detail(console, labelled, queries, labelled_hybrid)


def print_detail(console: Console, labelled: Labelled, queries: list[Query], got: Recall) -> None:
    per_domain: dict[str, list[int | None]] = defaultdict(list)
    for query, rank in zip(queries, got.ranks, strict=True):
        per_domain[labelled.domain[query.gold[0]]].append(rank)
    table = Table(title="recall per domain (labelled tools; a query's domain is its first gold's)")
    for col in ("domain", "queries", "tools", "recall@1", "recall@5"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    tools_in = Counter(labelled.domain.values())
    for domain, ranks in sorted(per_domain.items()):
        at1 = sum(r == 1 for r in ranks) / len(ranks)
        at5 = sum(r is not None and r <= 5 for r in ranks) / len(ranks)
        table.add_row(domain, str(len(ranks)), str(tools_in[domain]), f"{at1:.2f}", f"{at5:.2f}")
    console.print(table)
    misses = Table(title="misses at 5: the gold, and what came first")
    for col in ("query", "gold", "retrieved (best 3)"):
        misses.add_column(col)
    for query, rank, top in zip(queries, got.ranks, got.top, strict=True):
        if rank is None or rank > 5:
            misses.add_row(query.text, ", ".join(query.gold), ", ".join(top[:3]))
    console.print(misses)


if __name__ == "__main__":
    main()
