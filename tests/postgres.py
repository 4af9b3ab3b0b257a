"""A real PostgreSQL server for the tests: `initdb` in a temporary folder, `postgres` on a free
loopback port, stopped by its PID.

Debian's `postgresql` package provides the binaries (`make test` installs it). PostgreSQL
refuses to run as root, so as root the server runs as the package's `postgres` user, which
then owns the folder.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_START_TIMEOUT = 60.0


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    pid: int
    data: Path

    def url(self, database: str = "postgres") -> str:
        """A `postgresql://` URL for `database` (trust authentication: no password)."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Make an empty database `name`; its URL."""
        subprocess.run(
            [_binary("createdb"), "-h", self.host, "-p", str(self.port), "-U", self.user, name],
            check=True,
            capture_output=True,
        )
        return self.url(name)


def _binary(name: str) -> str:
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))), None
    )
    if found is None:
        msg = f"{name} not found: install Debian's postgresql package (`make test` does)"
        raise RuntimeError(msg)
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_postgres_user() -> tuple[int, int] | None:
    """The uid and gid to run the server as: the `postgres` user's when we are root."""
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """A running server with a superuser `agentrt`; stopped (and its folder removed) after."""
    ids = _as_postgres_user()
    root = Path(tempfile.mkdtemp(prefix="agentrt-pg-"))
    if ids is not None:
        os.chown(root, *ids)

    def demote() -> None:
        if ids is not None:
            os.setgid(ids[1])
            os.setuid(ids[0])

    data = root / "data"
    subprocess.run(
        [_binary("initdb"), "-D", str(data), "-U", "agentrt", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
        preexec_fn=demote,
    )
    port = _free_port()
    log = open(root / "server.log", "wb")  # noqa: SIM115 - held for the server's lifetime
    server = subprocess.Popen(
        [
            _binary("postgres"),
            "-D",
            str(data),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-k",
            str(root),
            "-c",
            "fsync=off",
            "-c",
            "max_connections=200",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=demote,
    )
    try:
        _wait_ready(server, port, root / "server.log")
        yield PostgresServer("127.0.0.1", port, "agentrt", server.pid, data)
    finally:
        server.send_signal(signal.SIGINT)  # "fast" shutdown: ends sessions, then exits
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(server: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            msg = f"postgres exited at start ({server.returncode}): {log.read_text()[-2000:]}"
            raise RuntimeError(msg)
        ready = subprocess.run(
            [_binary("pg_isready"), "-h", "127.0.0.1", "-p", str(port)], capture_output=True
        )
        if ready.returncode == 0:
            return
        time.sleep(0.1)  # polling a starting server's readiness, not synchronising tests
    msg = f"postgres did not accept connections within {_START_TIMEOUT:.0f} s"
    raise RuntimeError(msg)
