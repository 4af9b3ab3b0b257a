"""A wheel carries the default workspace, so `pip install agentrt` can run without the repo."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_wheel_ships_the_default_workspace(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("agentrt-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("strategies", "tools", "prompts", "registry"):
        shipped = sorted(
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        )
        assert shipped, folder
        for rel in shipped:
            assert f"agentrt/_workspace/{rel}" in names

    # Installed alone (no repository beside it), the package finds its workspace inside itself.
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    probe = (
        "import agentrt; w = agentrt.Workspace(); "
        "print(w.root); print(sorted(w.strategies)); print('calculate' in w.tools)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()
    assert out[0] == str(site / "agentrt" / "_workspace")
    assert out[2] == "True"
