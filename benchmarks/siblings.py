"""Loading a module that sits beside a benchmark (benchmarks/ is not a package): the agent
benchmark's families (`agents_<family>.py`) and the fault areas (`faults_<area>.py`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load(path: Path) -> ModuleType:
    """The module at `path`, registered under its file's stem."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module
