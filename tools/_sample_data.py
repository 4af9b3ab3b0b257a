"""The sample dataset of the default workspace: two years of daily sales, `data/sales.csv`.

Regenerate it (byte for byte the committed file) from the repository root with

    .venv/bin/python tools/_sample_data.py

One row per day × region × product category × channel, 2023-01-01 … 2024-12-31:

    date,region,product_category,channel,units,revenue
    2023-01-01,East,Clothing,Online,31,1245.70

4 regions × 5 categories × 2 channels × 731 days = 29,240 rows. Units are Poisson draws around
a level made of: the region's size, the category's volume and its split between the online
and store channels, a trend (online grows faster than stores), a weekly rhythm (stores peak on
Saturday, online early in the week), a yearly season per category (electronics around Black
Friday and Christmas, sports in summer, furniture in spring, clothing at the change of
seasons, groceries before Christmas), and noise. Revenue is units × the category's price, give
or take a few percent. `SPIKES` lists the bulk orders injected on top: each adds more revenue
than a whole ordinary day, so they stand out in daily totals as well as in their rows.

The file must come out identical on every machine: the noise comes from numpy's seeded PCG64
generator; the smooth parts are computed with Python's `math` and rounded before they reach
the generator; money is counted in integer cents; the CSV is formatted by hand.
"""

from __future__ import annotations

import math
from datetime import date, timedelta
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["CATEGORIES", "CHANNELS", "PATH", "REGIONS", "SPIKES", "Spike", "generate", "main"]

PATH = Path(__file__).resolve().parent.parent / "data" / "sales.csv"
SEED = 20230101
START, END = date(2023, 1, 1), date(2024, 12, 31)

REGIONS = {"East": 1.25, "North": 1.0, "South": 0.8, "West": 1.1}
"""Region → size (a multiplier of every category's volume)."""


class Category(NamedTuple):
    units: float
    """Units a day in a store of a size-1 region, before trend and season."""
    price_cents: int
    online: float
    """Online volume as a fraction of the store volume."""


CATEGORIES = {
    "Clothing": Category(42, 3990, 0.8),
    "Electronics": Category(9, 34900, 1.1),
    "Furniture": Category(4, 28900, 0.5),
    "Groceries": Category(160, 850, 0.3),
    "Sports": Category(20, 5400, 0.6),
}
CHANNELS = ("Online", "Store")

# Monday first, as date.weekday() counts.
_WEEKLY = {
    "Online": (1.08, 1.05, 1.02, 1.0, 0.95, 0.92, 0.98),
    "Store": (0.85, 0.88, 0.92, 0.97, 1.1, 1.3, 1.0),
}
_GROWTH = {"Online": 0.25, "Store": 0.04}
"""Growth a year, linear from the first day."""


class Spike(NamedTuple):
    date: date
    region: str
    product_category: str
    channel: str
    extra_units: int


SPIKES = (
    Spike(date(2023, 4, 18), "East", "Electronics", "Online", 290),
    Spike(date(2023, 8, 9), "West", "Furniture", "Store", 350),
    Spike(date(2024, 1, 23), "North", "Electronics", "Store", 280),
    Spike(date(2024, 6, 12), "South", "Sports", "Online", 1850),
    Spike(date(2024, 10, 2), "East", "Furniture", "Online", 340),
)
"""Bulk orders added on top of an ordinary day's units."""


def _bump(day_of_year: int, peak: int, width: float) -> float:
    """A bell around `peak` (days), `width` days wide, wrapping at the year's end."""
    distance = min(abs(day_of_year - peak), 365 - abs(day_of_year - peak))
    return math.exp(-0.5 * (distance / width) ** 2)


def _season(category: str, day_of_year: int) -> float:
    angle = 2 * math.pi * day_of_year / 365
    if category == "Electronics":  # Black Friday (late November), then Christmas
        return 1 + 0.45 * _bump(day_of_year, 331, 6) + 0.3 * _bump(day_of_year, 352, 10)
    if category == "Sports":  # summer
        return 1 + 0.3 * math.cos(angle - 2 * math.pi * 182 / 365)
    if category == "Furniture":  # spring
        return 1 + 0.15 * math.cos(angle - 2 * math.pi * 100 / 365)
    if category == "Clothing":  # March and September, and Christmas
        return (
            1
            + 0.15 * math.cos(2 * angle - 2 * math.pi * 140 / 365)
            + 0.2 * _bump(day_of_year, 350, 10)
        )
    return 1 + 0.12 * _bump(day_of_year, 355, 5)  # groceries: the days before Christmas


def generate() -> str:
    """The CSV text of the dataset."""
    rng = np.random.default_rng(SEED)
    keys: list[tuple[date, str, str, str]] = []
    levels: list[float] = []
    day = START
    while day <= END:
        years = (day - START).days / 365
        day_of_year = day.timetuple().tm_yday
        for region, size in REGIONS.items():
            for category, c in CATEGORIES.items():
                season = _season(category, day_of_year)
                for channel in CHANNELS:
                    share = c.online if channel == "Online" else 1.0
                    level = (
                        c.units
                        * size
                        * share
                        * (1 + _GROWTH[channel] * years)
                        * _WEEKLY[channel][day.weekday()]
                        * season
                    )
                    keys.append((day, region, category, channel))
                    levels.append(level)
        day += timedelta(days=1)

    # Day-to-day noise in the level (lognormal), then the count of units sold (Poisson). The
    # levels are rounded so that a last-bit difference in a platform's math library cannot
    # change a draw.
    noise = rng.normal(0.0, 0.12, len(levels))
    lam = np.array([round(lv * math.exp(float(n)), 6) for lv, n in zip(levels, noise, strict=True)])
    units = rng.poisson(lam)
    price_noise = rng.normal(0.0, 0.02, len(levels))

    extra = {(s.date, s.region, s.product_category, s.channel): s.extra_units for s in SPIKES}
    lines = ["date,region,product_category,channel,units,revenue"]
    for key, n, p in zip(keys, units.tolist(), price_noise.tolist(), strict=True):
        day, region, category, channel = key
        n += extra.get(key, 0)
        price_cents = round(CATEGORIES[category].price_cents * (1 + round(p, 4)))
        cents = n * price_cents
        lines.append(
            f"{day.isoformat()},{region},{category},{channel},{n},{cents // 100}.{cents % 100:02d}"
        )
    return "\n".join(lines) + "\n"


def main(path: Path = PATH) -> Path:
    """Write the dataset to `path` (by default the workspace's `data/sales.csv`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(generate().encode("ascii"))
    return path


if __name__ == "__main__":
    print(main())
