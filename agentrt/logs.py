"""Logging: the library's loggers, and a set-up for programs built on agentrt.

The library logs through structlog with the run id bound; the application decides where logs
go (JSON lines in production, pretty on a terminal). The CLI calls `configure_logging()`.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO, cast

__all__ = ["configure_logging", "get_logger"]


class _Logger:
    """A structlog logger imported on first use: most runs never log, and importing structlog
    (with rich, for tracebacks) would make `import agentrt` half as fast again."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._log: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._log is None:
            import structlog

            self._log = structlog.get_logger(self._name)
        return getattr(self._log, method)


def get_logger(name: str) -> Any:
    return _Logger(name)


def configure_logging(level: int = logging.WARNING, *, json: bool | None = None) -> None:
    """Send structlog output to stderr, as JSON lines unless stderr is a terminal.

    :param level: the lowest level printed
    :param json: force JSON (True) or pretty (False) output; None decides by the terminal
    """
    import structlog

    as_json = not sys.stderr.isatty() if json is None else json
    processors: list[structlog.typing.Processor] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if as_json:
        processors += [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    else:
        processors.append(structlog.dev.ConsoleRenderer())
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # PrintLogger only writes and flushes: the stand-in needs nothing else of a TextIO.
        logger_factory=structlog.PrintLoggerFactory(cast(TextIO, _Stderr())),
        cache_logger_on_first_use=True,
    )


class _Stderr:
    """`sys.stderr` as it is when a line is written, not when logging was configured: a host
    that swaps it (a test runner's capture, an embedding application) must not leave the
    loggers writing to a stream it has since closed."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
