"""Logging: the library's loggers, and a set-up for programs built on agentrt.

agentrt logs through the standard `logging` tree (`agentrt`, `agentrt.*`), with structlog to
bind the run id and other fields, which travel as the record's `extra`. Like any library it
prints nothing by itself: its root logger has a `NullHandler`, so until the application
configures `logging` (or calls `configure_logging()`, as the CLI does) a warning goes nowhere
— never to stdout, where it would corrupt an NDJSON pipe or an MCP stdio stream.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO, cast

__all__ = ["configure_logging", "get_logger"]

_ROOT = "agentrt"
logging.getLogger(_ROOT).addHandler(logging.NullHandler())


class _Logger:
    """A structlog logger over `logging.getLogger(name)`, made on first use: most runs never
    log, and importing structlog (rich with it, when installed: ~100 ms of CPU on the
    development machine) costs as much again as a code-first agent's whole first run. `bind`
    is kept here until then, so binding a run's id imports nothing."""

    def __init__(self, name: str, bound: dict[str, Any] | None = None) -> None:
        self._name = name
        self._bound = bound or {}
        self._log: Any = None

    def bind(self, **values: Any) -> _Logger:
        return _Logger(self._name, {**self._bound, **values})

    def __getattr__(self, method: str) -> Any:
        if self._log is None:
            import structlog

            # Wrapped here rather than through structlog's global configuration, which is the
            # application's: agentrt's records go to `logging` whatever that says.
            self._log = structlog.wrap_logger(
                logging.getLogger(self._name),
                processors=[
                    structlog.stdlib.filter_by_level,
                    structlog.stdlib.render_to_log_kwargs,
                ],
                wrapper_class=structlog.stdlib.BoundLogger,
            ).bind(**self._bound)
        return getattr(self._log, method)


def get_logger(name: str) -> Any:
    return _Logger(name)


def configure_logging(level: int = logging.WARNING, *, json: bool | None = None) -> None:
    """Print agentrt's log records to stderr, as JSON lines unless stderr is a terminal.

    Calling it again replaces the earlier set-up. Records no longer propagate to the root
    logger, so an application that also configures `logging` does not print them twice.

    :param level: the lowest level printed
    :param json: force JSON (True) or pretty (False) output; None decides by the terminal
    """
    import structlog

    as_json = not sys.stderr.isatty() if json is None else json
    renderer: list[structlog.typing.Processor] = (
        [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
        if as_json
        else [structlog.dev.ConsoleRenderer()]
    )
    handler = logging.StreamHandler(cast(TextIO, _Stderr()))
    handler.set_name(_ROOT)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.ExtraAdder(),
                structlog.processors.TimeStamper(fmt="iso", utc=True),
            ],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderer],
        )
    )
    logger = logging.getLogger(_ROOT)
    for old in [h for h in logger.handlers if h.get_name() == _ROOT]:
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


class _Stderr:
    """`sys.stderr` as it is when a line is written, not when logging was configured: a host
    that swaps it (a test runner's capture, an embedding application) must not leave the
    loggers writing to a stream it has since closed."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
