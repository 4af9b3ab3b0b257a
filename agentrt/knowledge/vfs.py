"""Virtual files, and the shell-like commands a model may run over them.

A run's retrieval tools write what they find here (`save_search_results`), so that the model
can scan many results with `grep` and `head` instead of reading them all into its context.
Nothing here touches the real file system or starts a process: the files are strings in a
dict, the commands are Python. Paths are POSIX-like and absolute from a virtual `/`; a `..`
that would climb above it is refused, so no path names anything outside. Every command's
output is bounded in lines and characters, and says what it left out; a line too long to show
is shown in part, with the `cat` offset to read on from.

`grep` runs RE2 (google-re2), whose matching is linear in the text and the pattern, in bounded
memory (`REGEX_MEMORY`), and which releases the GIL while it matches, so the event loop keeps
running beside a sync tool's thread. What RE2 cannot bound it does not accept: backreferences,
look-around, counted repeats beyond 1000 in all (`((a{200}){200}){200}` is refused at once,
where a backtracking engine spent 2.2 GB and 10 s compiling it). A search is cut into calls of
bounded cost (`REGEX_WORK`), and a wall-time limit (`REGEX_SECONDS`) is checked between them.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentrt.exceptions import ShellError

__all__ = ["ARTIFACT", "VirtualFiles", "files_of"]

MAX_PATH = 512
MAX_FILES = 1000
MAX_FILE_CHARS = 2_000_000
MAX_PATTERN = 500
REGEX_SECONDS = 2.0
"""Wall time a grep may take (read between RE2 calls; one call costs at most `REGEX_WORK`)."""
REGEX_MEMORY = 1 << 20
"""Bytes RE2 may use for one compiled pattern: its program and its DFA caches."""
REGEX_WORK = 50_000_000
"""Most bytes × program size in one RE2 call: RE2's worst case is linear in both, at about
10 ns a unit on a 2020s core (measured: 4-8 ns), so a call takes well under a second."""

ARTIFACT = "knowledge.vfs"
"""Where a run (or its session) keeps its virtual files, among its artifacts."""


@dataclass
class VirtualFiles:
    """Files by absolute virtual path. Folders exist by having files in them.

    :param max_lines: most lines any command prints
    :param max_chars: most characters any command prints
    """

    max_lines: int = 200
    max_chars: int = 8000
    _files: dict[str, str] = field(default_factory=dict, init=False, repr=False)

    def resolve(self, path: str) -> str:
        """The absolute normal form of `path` (relative paths start at `/`).

        :raises ShellError: the path is empty, too long, holds a NUL or a backslash, or
            climbs above `/`
        """
        if not path or len(path) > MAX_PATH or "\x00" in path or "\\" in path:
            msg = f"{path[:80]!r}: not a valid path (1–{MAX_PATH} characters, '/' separated)"
            raise ShellError(msg)
        parts: list[str] = []
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    msg = f"{path}: goes above / (there is nothing outside the virtual files)"
                    raise ShellError(msg)
                parts.pop()
                continue
            parts.append(part)
        return "/" + "/".join(parts)

    def write(self, path: str, text: str) -> str:
        """Create or replace a file; its absolute path."""
        resolved = self.resolve(path)
        if resolved == "/" or self._is_dir(resolved):
            msg = f"{resolved}: is a directory"
            raise ShellError(msg)
        if any(resolved.startswith(f + "/") for f in self._files):
            msg = f"{resolved}: a parent of it is a file"
            raise ShellError(msg)
        if resolved not in self._files and len(self._files) >= MAX_FILES:
            msg = f"{resolved}: no room (at most {MAX_FILES} files)"
            raise ShellError(msg)
        self._files[resolved] = text[:MAX_FILE_CHARS]
        return resolved

    def paths(self) -> list[str]:
        """Every file's absolute path, sorted."""
        return sorted(self._files)

    def _is_dir(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        return path == "/" or any(f.startswith(prefix) for f in self._files)

    def _files_under(self, path: str) -> list[str]:
        resolved = self.resolve(path)
        if resolved in self._files:
            return [resolved]
        if self._is_dir(resolved):
            prefix = resolved.rstrip("/") + "/"
            return sorted(f for f in self._files if f.startswith(prefix))
        msg = f"{path}: no such file or directory"
        raise ShellError(msg)

    def _file(self, path: str) -> tuple[str, str]:
        resolved = self.resolve(path)
        if resolved in self._files:
            return resolved, self._files[resolved]
        if self._is_dir(resolved):
            msg = f"{path}: is a directory"
            raise ShellError(msg)
        msg = f"{path}: no such file or directory"
        raise ShellError(msg)

    def _bounded(self, rows: list[_Row], total: int | None = None) -> str:
        """At most `max_lines` rows and `max_chars` characters of them, saying what is left
        out. A row too long to ever fit is shown in part, with where to read on from.

        :param total: how many rows there are in all, when `rows` holds only the first ones
        """
        shown: list[str] = []
        size = 0
        for row in rows[: self.max_lines]:
            if size + len(row.text) + 1 <= self.max_chars:
                shown.append(row.text)
                size += len(row.text) + 1
                continue
            if len(row.text) > self.max_chars:
                shown.append(_piece(row, max(self.max_chars - size - 1, 0)))
            break
        left = (len(rows) if total is None else total) - len(shown)
        if left:
            shown.append(f"[… {left} more line(s) not shown: narrow it with grep or head]")
        return "\n".join(shown)

    def _lines(self, path: str, text: str, offset: int, limit: int) -> tuple[list[_Row], int]:
        """The first `limit` lines of `text` from `offset` on, as rows that say where each
        starts in the file; and how many lines there are."""
        lines = text[offset:].splitlines(keepends=True)
        rows: list[_Row] = []
        start = offset
        for line in lines[: max(limit, 0)]:
            # Without its line break; a break alone splits into one empty line.
            rows.append(_Row(line.splitlines()[0], path, start))
            start += len(line)
        return rows, len(lines)

    # -- the commands ---------------------------------------------------------------------------

    def ls(self, path: str = "/") -> str:
        """The entries of a folder (folders end in `/`), or a file's own line; with sizes."""
        resolved = self.resolve(path)
        if resolved in self._files:
            return f"{resolved}  {_size(self._files[resolved])}"
        if not self._is_dir(resolved):
            msg = f"{path}: no such file or directory"
            raise ShellError(msg)
        prefix = resolved.rstrip("/") + "/"
        entries: dict[str, str] = {}
        for f in sorted(self._files):
            if f.startswith(prefix):
                name, _, rest = f[len(prefix) :].partition("/")
                entries.setdefault(
                    name + "/" if rest else name, "" if rest else _size(self._files[f])
                )
        if not entries:
            return "(no files yet: save_search_results writes some)"
        return self._bounded([_Row(f"{n}  {s}".rstrip()) for n, s in entries.items()])

    def cat(self, path: str, offset: int = 0) -> str:
        """A file's lines, from character `offset` on (where a cut line says to read on)."""
        resolved, text = self._file(path)
        if not 0 <= offset <= len(text):
            msg = f"offset {offset}: {resolved} has {len(text)} characters (offsets 0–{len(text)})"
            raise ShellError(msg)
        return self._bounded(*self._lines(resolved, text, offset, self.max_lines))

    def head(self, path: str, lines: int = 10) -> str:
        resolved, text = self._file(path)
        rows, total = self._lines(resolved, text, 0, min(lines, self.max_lines + 1))
        return self._bounded(rows, min(total, max(lines, 0)))

    def wc(self, path: str) -> str:
        """Lines, words and characters of each file (under a folder: each, then the total)."""
        rows: list[_Row] = []
        totals = [0, 0, 0]
        files = self._files_under(path)
        for f in files:
            text = self._files[f]
            counts = [len(text.splitlines()), len(text.split()), len(text)]
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
            rows.append(_Row(f"{counts[0]:>7} {counts[1]:>7} {counts[2]:>8} {f}"))
        if len(files) > 1:
            rows.append(_Row(f"{totals[0]:>7} {totals[1]:>7} {totals[2]:>8} total"))
        return self._bounded(rows)

    def grep(
        self,
        pattern: str,
        path: str = "/",
        *,
        ignore_case: bool = False,
        line_numbers: bool = False,
        count: bool = False,
    ) -> str:
        """Lines matching a regular expression (RE2 syntax), in a file or every file under a
        folder (each line then starts with its file's path, as `grep -r` does).

        :param ignore_case: `-i`
        :param line_numbers: `-n`
        :param count: `-c`: the number of matching lines per file instead of the lines
        :raises ShellError: the pattern is not valid RE2, or cannot be run within the limits
            (module docstring)
        """
        compiled = _compile(pattern, ignore_case)
        files = self._files_under(path)
        several = len(files) > 1
        deadline = time.monotonic() + REGEX_SECONDS
        rows: list[_Row] = []
        total = 0
        for f in files:
            found = _Search(compiled, pattern, f, self._files[f], deadline)
            matched = 0
            for number, line in found.lines():
                matched += 1
                if count or len(rows) > self.max_lines:
                    continue
                where = (f"{f}:" if several else "") + (f"{number}:" if line_numbers else "")
                start = found.offset(number) if len(where) + len(line) > self.max_chars else 0
                rows.append(_Row(where + line, f, start, len(where)))
            total += 1 if count else matched
            if count:
                rows.append(_Row(f"{f}:{matched}" if several else str(matched)))
        return self._bounded(rows, total) if total else "(no match)"


@dataclass(frozen=True, slots=True)
class _Row:
    """A line of a command's output."""

    text: str
    path: str | None = None
    """The file whose line this row shows, when it can be read on from a cut (`cat` offset)."""
    start: int = 0
    """Where that line starts in the file, in characters."""
    lead: int = 0
    """Characters of `text` before the line itself (grep's `path:number:`)."""


def _piece(row: _Row, room: int) -> str:
    """The first `room` characters of a row too long to show whole, and how to read on."""
    shown = max(room - row.lead, 0)
    rest = len(row.text) - row.lead - shown
    if row.path is None:
        return f"{row.text[:room]}[… {rest} more character(s) of this line not shown]"
    return (
        f"{row.text[:room]}[… the line goes on for {rest} more character(s): cat with "
        f'path="{row.path}" offset={row.start + shown} reads on from here]'
    )


def _compile(pattern: str, ignore_case: bool) -> Any:
    """`pattern` compiled by RE2, each match within a line, or the reason it is refused."""
    import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

    if len(pattern) > MAX_PATTERN:
        msg = f"the pattern is {len(pattern)} characters long; at most {MAX_PATTERN}"
        raise ShellError(msg)
    options = re2.Options()
    options.max_mem = REGEX_MEMORY
    options.log_errors = False
    options.case_sensitive = not ignore_case
    options.never_nl = True  # a match never spans lines, so a file searches as one text
    options.never_capture = True  # whether a line matches is all grep asks
    try:
        # Multi-line: ^ and $ match at each line, as when lines were searched one by one.
        return re2.compile("(?m)" + pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if isinstance(exc.args[0], bytes) else str(exc)
        if "pattern too large" in reason:
            reason = f"it compiles to more than RE2's {REGEX_MEMORY // 1024} KiB"
        msg = (
            f"{pattern!r}: not a valid regular expression here: {reason}. grep runs RE2, in "
            "time linear in the text and bounded memory: no backreferences (\\1) or "
            "look-around ((?=…), (?<=…)), at most 1000 repeats in all ({200} inside {200} is "
            "40,000), and \\z, not \\Z, for the end"
        )
        raise ShellError(msg) from None


class _Search:
    """One file searched by a compiled pattern, a chunk of whole lines per RE2 call.

    A call cannot be interrupted, and costs at most its text's bytes times the pattern's
    program size: chunks are sized so that no call exceeds `REGEX_WORK` units, and the wall
    clock is read between calls. A single line too long for one call with this pattern is
    refused, not searched.
    """

    def __init__(self, compiled: Any, pattern: str, path: str, text: str, deadline: float):
        self.compiled, self.pattern, self.path, self.text = compiled, pattern, path, text
        self.deadline = deadline
        # Lines as `splitlines` cuts them, joined by \n: the only break RE2 knows.
        self.lines_of = text.splitlines()
        self.data = "\n".join(self.lines_of).encode("utf-8", "surrogatepass")
        self._starts: list[int] | None = None

    def lines(self) -> Iterator[tuple[int, str]]:
        """Each matching line, with its number (from 1)."""
        data, size = self.data, max(int(self.compiled.programsize), 1)
        pos, counted, number = 0, 0, 1
        while self.lines_of and pos <= len(data):
            end = _chunk_end(data, pos, max(REGEX_WORK // size, 1))
            if (end - pos) * size > REGEX_WORK:
                line = number + data.count(b"\n", counted, pos)
                msg = (
                    f"{self.pattern!r} is too costly to search line {line} of {self.path} "
                    f"({end - pos} bytes) within the limits: simplify the pattern"
                )
                raise ShellError(msg)
            while pos <= end and (hit := self.compiled.search(data, pos, end)) is not None:
                first = data.rfind(b"\n", 0, hit.start()) + 1
                number += data.count(b"\n", counted, first)
                counted = first
                yield number, self.lines_of[number - 1]
                line_end = data.find(b"\n", first)
                pos = (len(data) if line_end < 0 else line_end) + 1
            pos = max(pos, end + 1)
            if time.monotonic() >= self.deadline:
                msg = (
                    f"{self.pattern!r} took longer than {REGEX_SECONDS:g} s (wall time) over "
                    f"{self.path}: narrow the path or simplify the pattern"
                )
                raise ShellError(msg)

    def offset(self, number: int) -> int:
        """Where line `number` starts in the file's text, in characters."""
        if self._starts is None:
            pieces = self.text.splitlines(keepends=True)
            self._starts = [0, *itertools.accumulate(map(len, pieces))]
        return self._starts[number - 1]


def _chunk_end(data: bytes, pos: int, step: int) -> int:
    """Where a chunk of whole lines from `pos` ends: at a line break at most `step` bytes on,
    or, when the line at `pos` is longer, at its own end."""
    if len(data) - pos <= step:
        return len(data)
    end = data.rfind(b"\n", pos, pos + step + 1)
    if end < 0:
        end = data.find(b"\n", pos)
    return len(data) if end < 0 else end


def files_of(artifacts: dict[str, Any]) -> VirtualFiles:
    """The virtual files of a run (or session), made empty on first use."""
    files: VirtualFiles = artifacts.setdefault(ARTIFACT, VirtualFiles())
    return files


def _size(text: str) -> str:
    return f"({len(text.splitlines())} lines, {len(text)} chars)"
