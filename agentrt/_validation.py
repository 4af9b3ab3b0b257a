"""Validation errors as one line of text, and YAML files read into models.

Internal: every loader of workspace data and every check of a model's answer goes through
these, so a bad field reads the same wherever it is found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agentrt.exceptions import WorkspaceError

__all__ = ["describe_errors", "load_yaml", "load_yaml_model"]

M = TypeVar("M", bound=BaseModel)


def describe_errors(
    exc: ValidationError,
    *,
    root: str | None = "(root)",
    quote: bool = True,
    limit: int | None = None,
) -> str:
    """`exc` as `field 'a.b': message; field 'c': message`.

    :param root: what to call an error on the value as a whole (an empty location), or None
        to give such an error's message alone (`not JSON` says enough about a whole line)
    :param quote: write `field 'a.b'` (for people) rather than a bare `a.b` (for models)
    :param limit: report at most this many errors (the first ones), or None for all
    """
    errors = exc.errors()
    if limit is not None:
        errors = errors[:limit]
    parts = []
    for e in errors:
        where = ".".join(map(str, e["loc"])) or root
        if where is None:
            parts.append(e["msg"])
        else:
            parts.append(f"field '{where}': {e['msg']}" if quote else f"{where}: {e['msg']}")
    return "; ".join(parts)


def load_yaml(path: Path) -> Any:
    """The YAML document in `path`; a file that cannot be read or parsed is a `WorkspaceError`
    naming it."""
    import yaml  # imported here: a workspace without YAML data never pays for it

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        msg = f"{path}: cannot be read: {exc.strerror}"
        raise WorkspaceError(msg) from None
    except yaml.YAMLError as exc:
        msg = f"{path}: not valid YAML: {exc}"
        raise WorkspaceError(msg) from None


def load_yaml_model(
    path: Path,
    model: type[M],
    *,
    data: Any = None,
    where: str | None = None,
) -> M:
    """The YAML file `path` (or `data` read from it) validated as `model`.

    :param where: what part of the file `data` is (`"entry 3"`), for the message
    :raises WorkspaceError: naming the file, the part and every bad field
    """
    if data is None:
        data = load_yaml(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        at = f"{where}: " if where else ""
        msg = f"{path}: {at}{describe_errors(exc)}"
        raise WorkspaceError(msg) from None
