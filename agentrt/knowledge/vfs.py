"""Virtual files, and the shell-like commands a model may run over them.

A run's retrieval tools write what they find here (`save_search_results`), so that the model
can scan many results with `grep` and `head` instead of reading them all into its context.
Nothing here touches the real file system or starts a process: the files are strings in a
dict, the commands are Python. Paths are POSIX-like and absolute from a virtual `/`; a `..`
that would climb above it is refused, so no path names anything outside. Every command's
output is bounded in lines and characters, and says what it left out; a regular expression
gets a time limit (the `regex` module's), so a pathological pattern cannot hang a worker.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agentrt.exceptions import ShellError

__all__ = ["ARTIFACT", "VirtualFiles", "files_of"]

MAX_PATH = 512
MAX_FILES = 1000
MAX_FILE_CHARS = 2_000_000
MAX_PATTERN = 500
REGEX_SECONDS = 2.0

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

    def _bounded(self, lines: list[str]) -> str:
        shown: list[str] = []
        size = 0
        for line in lines[: self.max_lines]:
            if size + len(line) + 1 > self.max_chars:
                break
            shown.append(line)
            size += len(line) + 1
        left = len(lines) - len(shown)
        if left:
            shown.append(f"[… {left} more line(s) not shown: narrow it with grep or head]")
        return "\n".join(shown)

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
        return self._bounded([f"{n}  {s}".rstrip() for n, s in entries.items()])

    def cat(self, path: str) -> str:
        _, text = self._file(path)
        return self._bounded(text.splitlines())

    def head(self, path: str, lines: int = 10) -> str:
        _, text = self._file(path)
        return self._bounded(text.splitlines()[: max(0, lines)])

    def wc(self, path: str) -> str:
        """Lines, words and characters of each file (under a folder: each, then the total)."""
        rows: list[str] = []
        totals = [0, 0, 0]
        files = self._files_under(path)
        for f in files:
            text = self._files[f]
            counts = [len(text.splitlines()), len(text.split()), len(text)]
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
            rows.append(f"{counts[0]:>7} {counts[1]:>7} {counts[2]:>8} {f}")
        if len(files) > 1:
            rows.append(f"{totals[0]:>7} {totals[1]:>7} {totals[2]:>8} total")
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
        """Lines matching a regular expression, in a file or every file under a folder (each
        line then starts with its file's path, as `grep -r` does).

        :param ignore_case: `-i`
        :param line_numbers: `-n`
        :param count: `-c`: the number of matching lines per file instead of the lines
        """
        import regex  # type: ignore[import-untyped]  # no stubs are installed

        if len(pattern) > MAX_PATTERN:
            msg = f"the pattern is {len(pattern)} characters long; at most {MAX_PATTERN}"
            raise ShellError(msg)
        try:
            compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
        except regex.error as exc:
            msg = f"{pattern!r}: not a valid regular expression: {exc}"
            raise ShellError(msg) from None
        files = self._files_under(path)
        several = len(files) > 1
        deadline = time.monotonic() + REGEX_SECONDS
        out: list[str] = []
        for f in files:
            matched = 0
            for number, line in enumerate(self._files[f].splitlines(), start=1):
                try:
                    hit = compiled.search(line, timeout=max(deadline - time.monotonic(), 0.001))
                except TimeoutError:
                    msg = f"{pattern!r} took longer than {REGEX_SECONDS:g} s: simplify it"
                    raise ShellError(msg) from None
                if hit is None:
                    continue
                matched += 1
                if not count:
                    where = (f"{f}:" if several else "") + (f"{number}:" if line_numbers else "")
                    out.append(where + line)
            if count:
                out.append(f"{f}:{matched}" if several else str(matched))
        return self._bounded(out) if out else "(no match)"


def files_of(artifacts: dict[str, Any]) -> VirtualFiles:
    """The virtual files of a run (or session), made empty on first use."""
    files: VirtualFiles = artifacts.setdefault(ARTIFACT, VirtualFiles())
    return files


def _size(text: str) -> str:
    return f"({len(text.splitlines())} lines, {len(text)} chars)"
