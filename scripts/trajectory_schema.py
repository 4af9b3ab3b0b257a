"""Write the JSON Schema of trajectory files to schemas/trajectory.schema.json.

    .venv/bin/python scripts/trajectory_schema.py

Run it after changing an event or the trajectory header: a test fails while the published
schema is stale.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentrt.trajectory.format import json_schema

SCHEMA = Path(__file__).resolve().parent.parent / "schemas" / "trajectory.schema.json"


def main() -> None:
    SCHEMA.write_text(json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {SCHEMA}")


if __name__ == "__main__":
    main()
