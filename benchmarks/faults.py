"""Faults tried on purpose, per area: how many attempts, how many got past the defence, and
what, if anything, was lost or leaked.

    .venv/bin/python benchmarks/faults.py          # every area, one table
    .venv/bin/python benchmarks/faults.py --json   # the rows as JSON

Each area is a module beside this one, `faults_<area>.py`, whose `measure()` returns its rows:
`{"area", "attempt", "attempts", "failures", "lost"}`. Every attempt stays on this machine
(SQLite files in a temporary folder, servers on 127.0.0.1) and is bounded in count and time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from siblings import load  # found through the line above

HERE = Path(__file__).parent

COLUMNS = ("area", "attempt", "attempts", "failures", "lost")


def areas() -> list[Path]:
    """The area modules, in name order."""
    return sorted(HERE.glob("faults_*.py"))


def measure_all() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in areas():
        started = time.perf_counter()
        print(f"trying {path.stem.removeprefix('faults_')} …", file=sys.stderr, flush=True)
        found = load(path).measure()
        for row in found:
            missing = set(COLUMNS) - set(row)
            if missing:
                msg = f"{path.name}: a row lacks {', '.join(sorted(missing))}: {row}"
                raise ValueError(msg)
        rows += found
        print(f"  {len(found)} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return rows


def show(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Faults tried on purpose")
    for column in COLUMNS:
        table.add_column(column, justify="right" if column in ("attempts", "failures") else "left")
    for row in rows:
        table.add_row(*(str(row[c]) for c in COLUMNS))
    attempts = sum(int(r["attempts"]) for r in rows)
    failures = sum(int(r["failures"]) for r in rows)
    table.add_row("all", "", str(attempts), str(failures), "", style="bold")
    Console().print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = measure_all()
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        show(rows)


if __name__ == "__main__":
    main()
