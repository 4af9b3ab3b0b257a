"""Internal. The SQL guard's bounds: what a statement may call, how big and deep its text may
be, how long it may run (a watchdog that interrupts SQLite from outside), how many bytes of
its result are kept.

These are the parts of `agentrt.sql.guard` that do not depend on the allow-lists of tables and
columns; the guard composes them.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agentrt.exceptions import QueryRefused

if TYPE_CHECKING:
    from sqlglot import Token

__all__ = [
    "NEVER_FUNCTIONS",
    "SAFE_FUNCTIONS",
    "BoundedRows",
    "Watchdog",
    "check_format",
    "check_nesting",
    "check_size",
    "fetch_bounded",
    "instr",
]

_SAFE_BY_KIND = {
    "scalar": "abs changes char coalesce concat concat_ws format glob hex ifnull iif instr "
    "last_insert_rowid length like likelihood likely lower ltrim max min nullif octet_length "
    "printf quote random randomblob replace round rtrim sign soundex sqlite_source_id "
    "sqlite_version substr substring total_changes trim typeof unhex unicode unlikely upper "
    "zeroblob",
    "aggregate": "avg count group_concat string_agg sum total",
    "window": "row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value "
    "last_value nth_value",
    "date and time": "date time datetime julianday unixepoch strftime timediff current_date "
    "current_time current_timestamp",
    "math": "acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln "
    "log log10 log2 mod pi pow power radians sin sinh sqrt tan tanh trunc",
    "json": "json json_array json_array_length json_error_position json_extract "
    "json_group_array json_group_object json_insert json_object json_patch json_pretty "
    "json_quote json_remove json_replace json_set json_type json_valid jsonb jsonb_array "
    "jsonb_extract jsonb_group_array jsonb_group_object jsonb_insert jsonb_object jsonb_patch "
    "jsonb_remove jsonb_replace jsonb_set -> ->>",
}
SAFE_FUNCTIONS = frozenset(name for names in _SAFE_BY_KIND.values() for name in names.split())
"""SQLite's built-in functions that compute on values and nothing else: scalar, aggregate,
window, date and time, math and JSON ones (`->` and `->>` are the JSON operators, which SQLite
authorizes as functions). Left out: whatever reaches outside the database or the values
(`load_extension`, the CLI's `readfile`/`writefile`/`edit`), returns or takes pointers
(`fts3_tokenizer`, `fts5`), serves full-text or R-tree internals (`snippet`, `rtreenode`, …) or
writes to the log (`sqlite_log`). A policy's `functions` adds to this list."""

NEVER_FUNCTIONS = frozenset(
    {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "fts5", "sqlite_log"}
)
"""Functions no policy may allow: they load code, touch files, log, or hand out pointers."""


def check_size(sql: str, max_chars: int) -> None:
    """Refuse a statement longer than `max_chars` before anything parses it (parsing grows
    faster than the text and runs outside the statement's timeout)."""
    if len(sql) > max_chars:
        msg = (
            f"the statement is {len(sql):,} characters long, more than the {max_chars:,} the "
            f"guard reads (max_sql_chars): write a shorter query (no long literal lists)"
        )
        raise QueryRefused(msg)


_OPENS = frozenset({"L_PAREN", "CASE"})
_CLOSES = frozenset({"R_PAREN", "END"})
_PREFIX = frozenset({"NOT", "DASH", "PLUS", "TILDE"})


def check_nesting(tokens: Iterable[Token], max_depth: int) -> None:
    """Refuse a statement nested deeper than `max_depth` before it is parsed: the parser
    recurses once per level (parentheses, subqueries, CASE, and chains of prefix operators
    such as `NOT NOT …` or `- - …`), and too deep a statement would exhaust Python's stack."""
    depth = deepest = chain = 0
    for token in tokens:
        kind = token.token_type.name
        chain = chain + 1 if kind in _PREFIX else 0
        if kind in _OPENS:
            depth += 1
        elif kind in _CLOSES:
            depth = max(depth - 1, 0)
        deepest = max(deepest, depth + chain)
    if deepest > max_depth:
        msg = (
            f"the statement is nested {deepest} levels deep (parentheses, subqueries, CASE, "
            f"repeated NOT or signs), more than the {max_depth} the guard reads (max_depth): "
            f"flatten it (a CTE per level, IN lists instead of nested ORs)"
        )
        raise QueryRefused(msg)


_DIRECTIVE = re.compile(r"%[-+ 0#,!]*(\*|\d+)?(?:\.(\*|\d*))?")


def check_format(function: str, fmt: str | None, max_bytes: int) -> None:
    """Refuse a `printf`/`format` call whose cost its format does not bound: SQLite loops once
    per unit of width or precision (`%.1000000000c` runs for seconds in one step, which no
    interrupt stops), so the format must be a literal, without `*`, and its widths and
    precisions at most `max_bytes` (the longest value SQLite may build anyway)."""
    if fmt is None:
        msg = (
            f"{function}() needs a literal format string: a computed one could ask for any "
            f"width, and SQLite cannot stop one call midway"
        )
        raise QueryRefused(msg)
    for match in _DIRECTIVE.finditer(fmt):
        for size in match.groups():
            if size == "*":
                msg = (
                    f"{function}() with `*` widths or precisions may not be called (the size "
                    f"would come from a value): write the number in the format"
                )
                raise QueryRefused(msg)
            if size and int(size) > max_bytes:
                msg = (
                    f"{function}() format {match.group(0)!r} asks for {int(size):,} characters, "
                    f"more than the {max_bytes:,} a value may have (max_built_bytes)"
                )
                raise QueryRefused(msg)


def instr(haystack: Any, needle: Any) -> int | None:
    """SQLite's `instr`, in linear time: SQLite's own compares the needle at every position
    (two 8 MB texts: hours in one step, which no interrupt stops); Python's search does not.
    1-based, 0 when absent, NULL with a NULL; bytes in two blobs, characters otherwise."""
    if haystack is None or needle is None:
        return None
    if isinstance(haystack, bytes) and isinstance(needle, bytes):
        return haystack.find(needle) + 1
    return _text(haystack).find(_text(needle)) + 1


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


WATCHDOG_THREAD = "agentrt-sql-watchdog"
"""The name of a `Watchdog`'s timer thread."""


class Watchdog:
    """Interrupts a connection from a timer thread once `seconds` have passed, so that the
    deadline binds even inside one long SQLite step, which a progress handler (called between
    steps) cannot stop. Leaving the block stops the timer; after that the connection is never
    touched, so it may be closed."""

    def __init__(self, connection: sqlite3.Connection, seconds: float) -> None:
        self._connection = connection
        self._lock = threading.Lock()
        self._armed = True
        self.fired = False
        """The deadline passed and the statement was interrupted."""
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.name = WATCHDOG_THREAD
        self._timer.daemon = True

    def _fire(self) -> None:
        with self._lock:
            if self._armed:
                self.fired = True
                self._connection.interrupt()

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # Under the lock: a timer firing now either interrupted already or never will.
        with self._lock:
            self._armed = False
        self._timer.cancel()
        # A cancelled timer's thread ends on its own a moment later; waiting for it (microseconds)
        # means no statement leaves a thread behind, however many run.
        self._timer.join()


@dataclass
class BoundedRows:
    """Rows fetched within the limits, and what was cut to keep them there."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    more: bool = False
    """Rows were left unread (past the row or byte limit)."""


def fetch_bounded(
    cursor: sqlite3.Cursor, max_rows: int, max_value_bytes: int, max_result_bytes: int
) -> BoundedRows:
    """At most `max_rows` rows, each text or blob value cut at `max_value_bytes`, and rows
    only while their values add up to `max_result_bytes`: one row at a time, so SQLite
    computes no more than what is kept."""
    out, size, cut = BoundedRows(), 0, 0
    while (row := cursor.fetchone()) is not None:
        if len(out.rows) == max_rows:
            out.more = True
            out.notes.append(f"more rows than max_rows={max_rows:,}: the first are kept")
            break
        values = []
        for value in row:
            kept = _cut(value, max_value_bytes)
            cut += kept is not value
            values.append(kept)
        size += sum(_size(v) for v in values)
        if size > max_result_bytes:
            out.more = True
            out.notes.append(
                f"rows stop at {len(out.rows):,}: the next would take the result past "
                f"max_result_bytes={max_result_bytes:,} bytes"
            )
            break
        out.rows.append(tuple(values))
    if cut:
        out.notes.insert(
            0,
            f"{cut:,} value(s) longer than max_value_bytes={max_value_bytes:,} bytes were cut "
            f"to that length",
        )
    return out


def _cut(value: Any, limit: int) -> Any:
    if isinstance(value, bytes) and len(value) > limit:
        return value[:limit]
    if isinstance(value, str) and len(value) > limit // 4:
        encoded = value.encode("utf-8", "surrogatepass")
        if len(encoded) > limit:
            # Cut on a character boundary: a partial UTF-8 sequence at the end is dropped.
            return encoded[:limit].decode("utf-8", "ignore")
    return value


def _size(value: Any) -> int:
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    return 8
