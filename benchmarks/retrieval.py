"""Tool retrieval: recall@k on a labelled query set, and narrowing latency at 3,000 tools.

    .venv/bin/python benchmarks/retrieval.py            # the whole table (about a minute)
    .venv/bin/python benchmarks/retrieval.py --quick    # a quarter of the queries, 600 tools
    .venv/bin/python benchmarks/retrieval.py --detail   # also recall per domain, and the misses
    .venv/bin/python benchmarks/retrieval.py --slice 8 --catalog 40   # the smoke test's size

Everything goes through the project's own code: `load_embedder`, `ToolIndex.build`,
`ToolIndex.search`, `await ToolIndex.query` and `narrow`.

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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from rich.console import Console
from rich.table import Table

from agentrt.catalog.index import ToolIndex, narrow
from agentrt.catalog.metadata import CapabilityMap, Registry, ToolMetadata
from agentrt.logs import configure_logging
from agentrt.vectors.embedder import Embedder, load_embedder

sys.path.insert(0, str(Path(__file__).parent))

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

TARGET_SEARCH_MS = 5.0
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
    index: ToolIndex,
    queries: Sequence[Query],
    vectors: npt.NDArray[np.float32],
    family: Callable[[str], str] = lambda name: name,
) -> Recall:
    """recall@k and MRR@10; a retrieved tool counts for the gold tool `family(tool)`."""
    ranks: list[int | None] = []
    tops: list[list[str]] = []
    for query, vector in zip(queries, vectors, strict=True):
        # One query per call: `search` merges the rows it is given into one result.
        top = [name for name, _ in index.search(vector, max(KS))]
        tops.append(top)
        hit = next((i + 1 for i, name in enumerate(top) if family(name) in query.gold), None)
        ranks.append(hit)
    n = len(queries)
    return Recall(
        queries=n,
        at={k: sum(r is not None and r <= k for r in ranks) / n for k in KS},
        mrr=sum(1 / r for r in ranks if r is not None) / n,
        ranks=ranks,
        top=tops,
    )


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
    """(a) `search` + `narrow`, the query's vector given."""
    query: list[float]
    """(b) `await query` (embedding in a worker thread, then `search`) + `narrow`."""
    embedding: list[float]
    """`Embedder.encode` of the query alone, in this thread."""
    cached: list[float]
    """`Embedder.encode` of the same query again: a cache hit."""
    burst: list[float]
    """(b) of each query when `BURST` of them arrive at once: the embedder batches them."""


async def time_narrowing(
    index: ToolIndex,
    texts: Sequence[str],
    vectors: npt.NDArray[np.float32],
    template: list[list[str]],
    warmup: int,
) -> Timings:
    """Each query through the three paths in turn: a shared machine's load drifts over a run,
    and interleaving lets every path see the same moments of it."""
    instruction = index.embedder.query_instruction
    # The warm-up starts the worker-thread pool and torch's kernels: a server pays that once.
    for text in texts[:warmup]:
        await index.query([text], RETRIEVE)
    timings = Timings([], [], [], [], [])
    embedder = index.embedder
    for text, vector, tools in zip(texts, vectors, template, strict=True):
        t0 = time.perf_counter()
        retrieved = index.search(vector, RETRIEVE)
        narrow(template=tools, retrieved=retrieved, safety=SAFETY, cap=CAP)
        timings.search.append(time.perf_counter() - t0)

        embedder.clear_cache()
        t0 = time.perf_counter()
        retrieved = await index.query([text], RETRIEVE)
        narrow(template=tools, retrieved=retrieved, safety=SAFETY, cap=CAP)
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
        "--torch-threads",
        type=int,
        help="torch's intra-op threads for indexing (default: torch's own choice, as agentrt "
        "leaves it; queries run on 1 whatever this says, as agentrt sets them)",
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
    with console.status(f"recall on {len(labelled.tools)} labelled tools"):
        vectors = embedder.encode([instruction + t for t in texts])
        small = ToolIndex.build(
            Registry(labelled.tools, labelled.capabilities), embedder, cache=None
        )
        labelled_recall = recall(small, queries, vectors)

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

    exact = recall(index, queries, vectors)
    family = recall(index, queries, vectors, family=variant_of.__getitem__)
    plan = templates(index.names, len(queries), args.seed)
    with console.status(f"timing narrowing over {len(queries)} queries"):
        timings = asyncio.run(time_narrowing(index, texts, vectors, plan, warmup))
    with (
        console.status(f"timing them again with {LOAD} processes spinning a core each"),
        busy(LOAD),
    ):
        loaded = asyncio.run(time_narrowing(index, texts, vectors, plan, min(warmup, 5)))

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
        table.add_row(f"recall@{k}", f"{labelled_recall.at[k]:.3f}", "", "")
    table.add_row("MRR@10", f"{labelled_recall.mrr:.3f}", "", "")
    for k in (1, 5):
        table.add_row(
            f"recall@{k}, {size:,} tools",
            f"{exact.at[k]:.3f}",
            "",
            f"exact; {family.at[k]:.3f} with variants",
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

    latency("(a) search + narrow", timings.search, TARGET_SEARCH_MS, "vector given")
    latency("(b) embed + search + narrow", timings.query, TARGET_WITH_EMBEDDING_MS, "await query")
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

    if args.detail:
        print_detail(console, labelled, queries, labelled_recall)


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
