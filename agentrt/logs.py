"""Logging set-up for programs built on agentrt: JSON lines in production, pretty on a terminal.

The library only logs through `structlog.get_logger("agentrt…")` with the run id bound; the
application decides where logs go. The CLI calls `configure_logging()`.
"""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["configure_logging"]


def configure_logging(level: int = logging.WARNING, *, json: bool | None = None) -> None:
    """Send structlog output to stderr, as JSON lines unless stderr is a terminal.

    :param level: the lowest level printed
    :param json: force JSON (True) or pretty (False) output; None decides by the terminal
    """
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
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
