"""Background CPU load for the latency benchmarks: processes spinning a core each.

with busy(2):
    ...  # timed with two other processes wanting a core each
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

SPIN = "while True:\n    pass\n"


@contextmanager
def busy(processes: int) -> Iterator[None]:
    """`processes` Python processes spinning while the block runs, killed and reaped after."""
    spinning = [
        subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL)
        for _ in range(processes)
    ]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
        for process in spinning:
            process.wait()
