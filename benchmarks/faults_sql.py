"""Faults tried against the SQL guard: writes, leaks of columns off the allow-list, resource
exhaustion. Part of `benchmarks/faults.py`'s table.

    .venv/bin/python benchmarks/faults_sql.py           # the rows, as a table
    .venv/bin/python benchmarks/faults_sql.py --limit 3 # a few attempts per row

Every attempt runs against a real SQLite file in a temporary folder. A write *fails* the
defence when the file's bytes change or a file appears beside it; a leak when a statement
reading a forbidden column (employees.salary, whose values all end in .25) runs, or returns
such a value; an exhaustion attempt when it is neither refused nor stopped, returns more bytes
than the policy allows, or raises anything but a `ToolError`.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentrt.exceptions import ToolError
from agentrt.sql.guard import GuardPolicy, SqlGuard

AREA = "sql guard"
SCHEMA = """
CREATE TABLE stores (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT, salary REAL, store_id INTEGER);
CREATE TABLE files (id INTEGER PRIMARY KEY, body BLOB);
CREATE VIEW staff AS SELECT employees.name AS name, stores.name AS store
    FROM employees JOIN stores ON stores.id = employees.store_id;
"""
WRITES = [
    "INSERT INTO stores VALUES (9, 'X', 'Y')",
    "REPLACE INTO stores VALUES (1, 'X', 'Y')",
    "INSERT INTO stores SELECT id + 10, name, city FROM stores",
    "UPDATE employees SET salary = 0",
    "DELETE FROM files",
    "DROP TABLE files",
    "DROP VIEW staff",
    "CREATE TABLE x AS SELECT * FROM stores",
    "CREATE INDEX i ON stores(city)",
    "CREATE TRIGGER t AFTER INSERT ON stores BEGIN DELETE FROM files; END",
    "ALTER TABLE stores RENAME TO shops",
    "VACUUM",
    "REINDEX",
    "ANALYZE",
    "BEGIN; DELETE FROM files; COMMIT",
    "PRAGMA user_version = 7",
    "PRAGMA journal_mode = WAL",
    "PRAGMA writable_schema = ON",
    "ATTACH DATABASE '{folder}/other.db' AS other",
    "WITH d AS (SELECT 1) DELETE FROM files",
    "UPDATE stores SET city = 'Z' RETURNING *",
]
DRESSINGS = ["{}", "SELECT 1; {}", "/* ; */ {} -- ;"]
LEAKS = [
    "SELECT salary FROM employees",
    "SELECT name FROM employees ORDER BY salary",
    "SELECT * FROM employees",
    "SELECT e.* FROM employees AS e",
    "SELECT * FROM (SELECT * FROM employees)",
    "WITH x AS (SELECT * FROM employees) SELECT * FROM x",
    "SELECT name FROM employees NATURAL JOIN (SELECT 1000.25 AS salary)",
    "SELECT c.salary FROM employees JOIN (SELECT 1000.25 AS salary UNION SELECT 2000.25) AS c "
    "USING (salary)",
    "SELECT name FROM employees NATURAL LEFT JOIN (SELECT 1000.25 AS salary)",
    'SELECT max("SALARY") FROM employees',
    "SELECT [salary] FROM employees",
    "SELECT name FROM stores WHERE id IN (SELECT store_id FROM employees WHERE salary > 0)",
    "SELECT printf('%s', salary) FROM employees",
    "SELECT json_group_array(salary) FROM employees",
    "SELECT group_concat(salary) FROM employees",
    "SELECT name FROM employees WHERE instr(salary, '.25')",
    "SELECT fts3_tokenizer('simple')",
    "SELECT load_extension('x')",
    "SELECT * FROM pragma_table_info('employees')",
    "SELECT sql FROM sqlite_master",
]
EXHAUSTION = [
    "SELECT length(printf('%.*c', 1000000000, 'x'))",
    "SELECT length(printf('%.1000000000c', 'x'))",
    "SELECT length(zeroblob(1000000000))",
    "SELECT length(hex(randomblob(600000000)))",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) "
    "SELECT count(length(hex(randomblob(8000000)))) FROM n",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
    "SELECT instr(replace(hex(zeroblob(300000)), '0', 'a'), "
    "replace(hex(zeroblob(150000)), '0', 'a') || 'b')",
    "SELECT body FROM files",
    "SELECT body, body, body FROM files, files AS f2",
    "SELECT " + "(" * 60 + "1" + ")" * 60,
    "SELECT " + "(SELECT " * 60 + "1" + ")" * 60,
    "SELECT " + "NOT " * 300 + "1",
    "SELECT " + "- " * 2000 + "1",
    "SELECT 1 WHERE 1 IN (" + ", ".join(map(str, range(120_000))) + ")",
]
POLICY = GuardPolicy(
    timeout=0.5, max_result_bytes=1_000_000, columns={"employees": ["id", "name", "store_id"]}
)


def make_database(path: Path) -> Path:
    """Stores, employees with a secret salary (every value ends in .25), 20 blobs of 1 MB."""
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA)
        db.executemany(
            "INSERT INTO stores VALUES (?, ?, ?)", [(1, "North", "Lyon"), (2, "South", "Nice")]
        )
        db.executemany(
            "INSERT INTO employees VALUES (?, ?, ?, ?)",
            [(i, f"E{i}", 1000.25 * i, i % 2 + 1) for i in range(1, 9)],
        )
        db.executemany(
            "INSERT INTO files (body) VALUES (?)", [(os.urandom(1 << 20),) for _ in range(20)]
        )
    db.close()
    return path


def _digest(folder: Path) -> tuple[str, list[str]]:
    data = (folder / "db.sqlite").read_bytes()
    return hashlib.sha256(data).hexdigest(), sorted(os.listdir(folder))


def _writes(folder: Path, limit: int | None) -> dict[str, Any]:
    database = folder / "db.sqlite"
    tried = [d.format(w).replace("{folder}", str(folder)) for w in WRITES for d in DRESSINGS]
    # With writes allowed (rows of `stores` only): what must stay refused. The last write
    # (UPDATE stores) is allowed then, so it is not tried.
    tried += [w.replace("{folder}", str(folder)) for w in WRITES[5:-1]]
    tried = tried[:limit]
    failures, lost = 0, []
    for index, sql in enumerate(tried):
        writes_allowed = index >= len(WRITES) * len(DRESSINGS)
        policy = GuardPolicy(allow_writes=True, tables=["stores"]) if writes_allowed else POLICY
        before = _digest(folder)
        try:
            SqlGuard(database, policy).execute(sql)
            stopped = False
        except ToolError:
            stopped = True
        if not stopped or _digest(folder) != before:
            failures += 1
            lost.append(sql[:60])
    return _row(
        "writes (DML, DDL, PRAGMA, ATTACH; stacked, commented; with writes allowed)",
        len(tried),
        failures,
        lost,
    )


def _leaks(folder: Path, limit: int | None) -> dict[str, Any]:
    tried, failures, lost = LEAKS[:limit], 0, []
    guard = SqlGuard(folder / "db.sqlite", POLICY)
    for sql in tried:
        try:
            result = guard.execute(sql)
        except ToolError:
            continue
        failures += 1
        leaked = any(".25" in str(v) for row in result.rows for v in row)
        lost.append(f"{sql[:50]}{' (salaries)' if leaked else ''}")
    return _row(
        "leaks (off-list columns via joins, *, subqueries, functions)", len(tried), failures, lost
    )


def _exhaustion(folder: Path, limit: int | None) -> dict[str, Any]:
    tried, failures, lost = EXHAUSTION[:limit], 0, []
    guard = SqlGuard(folder / "db.sqlite", POLICY)
    for sql in tried:
        try:
            result = guard.execute(sql)
        except ToolError:
            continue
        except Exception as exc:  # anything but a ToolError (RecursionError, say) fails
            failures += 1
            lost.append(f"{sql[:40]}: {type(exc).__name__}")
            continue
        size = sum(len(v) if isinstance(v, bytes | str) else 8 for row in result.rows for v in row)
        if size > POLICY.max_result_bytes or not (result.truncated or len(result.rows) <= 1):
            failures += 1
            lost.append(f"{sql[:40]}: {size:,} bytes")
    return _row(
        "resource exhaustion (long steps, huge values, big results, deep or long text)",
        len(tried),
        failures,
        lost,
    )


def _row(attempt: str, attempts: int, failures: int, lost: list[str]) -> dict[str, Any]:
    return {
        "area": AREA,
        "attempt": attempt,
        "attempts": attempts,
        "failures": failures,
        "lost": "; ".join(lost) or "nothing",
    }


def measure(limit: int | None = None) -> list[dict[str, Any]]:
    """One row per kind of fault; `limit` caps the attempts of each (None: all of them)."""
    kinds: list[Callable[[Path, int | None], dict[str, Any]]] = [_writes, _leaks, _exhaustion]
    # sqlglot warns on every statement it parses as a Command (VACUUM, REPLACE …): noise here.
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="faults-sql-") as tmp:
        rows = []
        for kind in kinds:
            folder = Path(tmp) / kind.__name__.strip("_")
            folder.mkdir()
            make_database(folder / "db.sqlite")
            rows.append(kind(folder, limit))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="attempts per row at most")
    args = parser.parse_args()
    for row in measure(args.limit):
        counts = f"{row['attempts']:>4} {row['failures']:>4}"
        print(f"{row['area']:<10} {row['attempt']:<82} {counts}  {row['lost']}")


if __name__ == "__main__":
    main()
