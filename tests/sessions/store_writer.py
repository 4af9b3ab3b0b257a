"""A writer process for the store conformance suite (`python -m tests.sessions.store_writer`).

interleave URL WRITER TURNS SESSIONS   appends TURNS turns, turn j to session
                                       s{(WRITER + j) % SESSIONS}, after "ready" is
                                       answered with a line on stdin (so all start together)
hang URL SESSION                       appends one turn, and inside its transaction (the
                                       row written, not committed) says "inside" and waits
                                       for a SIGKILL
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

from agentrt import Message, SessionConflict, Turn, open_store


def turn(writer: int, j: int) -> Turn:
    return Turn(
        run_id=f"w{writer}-{j}",
        messages=[
            Message(role="user", content=f"writer {writer} turn {j}"),
            Message(role="assistant", content=f"noted {writer}.{j}"),
        ],
    )


async def interleave(url: str, writer: int, turns: int, sessions: int) -> None:
    store = open_store(url)
    await store.open()
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    versions: dict[str, int] = {}
    for j in range(turns):
        session = f"s{(writer + j) % sessions}"
        while True:  # as the agent does: after a conflict, append after the other turn
            try:
                versions[session] = await store.append(
                    session, turn(writer, j), versions.get(session, 0)
                )
                break
            except SessionConflict as exc:
                versions[session] = exc.actual
    await store.close()


def _inside() -> None:
    print("inside", flush=True)
    threading.Event().wait()  # until killed


async def hang(url: str, session: str) -> None:
    store = open_store(url)
    await store.open()
    module: Any = sys.modules[type(store).__module__]
    insert = module._insert_turn
    if asyncio.iscoroutinefunction(insert):

        async def held(*args: Any) -> None:
            await insert(*args)
            print("inside", flush=True)
            await asyncio.Event().wait()

        module._insert_turn = held
    else:

        def held_sync(*args: Any) -> None:
            insert(*args)
            _inside()

        module._insert_turn = held_sync
    version = (await store.load(session)).version
    await store.append(session, turn(99, version), version)


if __name__ == "__main__":
    mode, url, *rest = sys.argv[1:]
    if mode == "interleave":
        writer, turns, sessions = (int(a) for a in rest)
        asyncio.run(interleave(url, writer, turns, sessions))
    else:
        asyncio.run(hang(url, rest[0]))
