"""Every example in examples/ runs and shows what it says it shows: the first three on a
scripted model, the embedded one on the real 0.5B model, as a user runs it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import uvicorn
from httpx_sse import connect_sse

from agentrt import (
    Event,
    Message,
    RunFinishedEvent,
    ScriptedModel,
    ToolFinishedEvent,
    event_adapter,
)
from tests.helpers import EXAMPLES, call, check_stream, load_example, run_python
from tests.server.serving import LiveServer, wait_until


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The examples record their runs in ./trajectories, as a user's would: here, in tmp."""
    monkeypatch.chdir(tmp_path)


def tool_outputs(events: list[Event]) -> list[object]:
    return [e.output for e in events if isinstance(e, ToolFinishedEvent)]


LYON = {"city": "Lyon", "temperature_c": 21.5, "summary": "Sunny"}


class TestFastAPIChat:
    def test_post_chat_streams_the_run_as_sse_over_a_real_server(self) -> None:
        """One SSE event per agentrt event, named by its type, ending with `run_finished`
        whose output is the typed forecast; a session's second turn sees the first."""
        example = load_example("fastapi_chat")
        model = ScriptedModel(
            [
                call("weather", city="Lyon"),
                '{"city": "Lyon", "temperature_c": 21.5, "summary": "Sunny"}',
                '{"city": "Lyon", "temperature_c": 21.5, "summary": "Still sunny"}',
            ]
        )
        app = example.create_app(example.build_agent(model))
        # Plain uvicorn, as the example's own `__main__` serves it.
        with (
            LiveServer(app, server=uvicorn.Server) as server,
            httpx.Client(base_url=server.url, timeout=30) as client,
        ):
            body = {"message": "What is the weather in Lyon?", "session_id": "s1"}
            with connect_sse(client, "POST", "/chat", json=body) as source:
                assert source.response.headers["content-type"].startswith("text/event-stream")
                sent = list(source.iter_sse())
            events = [event_adapter.validate_json(s.data) for s in sent]
            again = {"message": "And tomorrow?", "session_id": "s1"}
            with connect_sse(client, "POST", "/chat", json=again) as source:
                second = [event_adapter.validate_json(s.data) for s in source.iter_sse()]
            empty = client.post("/chat", json={"message": " "})

        assert [s.event for s in sent] == [e.type for e in events]
        assert [s.id for s in sent] == [str(e.seq) for e in events]
        check_stream(events)
        end = events[-1]
        assert isinstance(end, RunFinishedEvent)
        assert (end.status, end.output) == ("ok", LYON)
        assert tool_outputs(events) == [{"temperature_c": 21.5, "sky": "sunny"}]
        assert "output_delta" not in [e.type for e in events]  # the answer was JSON already
        # The session's second run was sent the first's tool call and result.
        roles = [m.role for m in model.requests[2].messages if m.role != "system"]
        assert roles == ["user", "assistant", "tool", "assistant", "user"]
        assert isinstance(second[-1], RunFinishedEvent)
        assert second[-1].output == {**LYON, "summary": "Still sunny"}
        # Bad input is refused before any stream starts, saying why.
        assert empty.status_code == 422
        assert empty.json() == {"detail": "the query is empty"}

    def test_a_client_leaving_mid_stream_cancels_the_run(self, tmp_path: Path) -> None:
        """What the example's `async with run` is for: the recorded run ends `cancelled`,
        long before the slow model would have finished its answer."""
        example = load_example("fastapi_chat")
        model = ScriptedModel(["word " * 3000], token_delay=0.01)  # 30 s of answer
        app = example.create_app(example.build_agent(model))
        with (
            LiveServer(app, server=uvicorn.Server) as server,
            httpx.Client(base_url=server.url, timeout=30) as client,
        ):
            body = {"message": "Talk."}
            with connect_sse(client, "POST", "/chat", json=body) as source:
                for sse in source.iter_sse():
                    if sse.event == "text_delta":
                        break  # and the connection closes

            def finished() -> list[str]:
                return [
                    line
                    for path in tmp_path.rglob("*.jsonl")
                    for line in path.read_text(encoding="utf-8").splitlines()
                    if '"type":"run_finished"' in line
                ]

            (end,) = wait_until(finished, "the run to be recorded as finished", timeout=10)
        assert '"status":"cancelled"' in end


async def test_database_deps_the_tool_reads_the_injected_connection(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The tool queried the run's database for the customer the deps name: order 2 is
    another customer's, order 1 is shipped."""
    example = load_example("database_deps")
    model = ScriptedModel([call("orders", status="open"), "Your lamp (order 3) is open."])
    result = await example.main(model)
    events = result.trajectory.events
    assert tool_outputs(events) == [[{"id": 3, "item": "lamp", "total": 32.5, "status": "open"}]]
    assert result.trajectory.header.deps_type == "database_deps_example.Db"
    assert capsys.readouterr().out == "Your lamp (order 3) is open.\n"


async def test_chat_history_the_second_turn_sees_the_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The second question, "And in yen?", goes with the first turn: question, tool call,
    result and answer."""
    example = load_example("chat_history")
    model = ScriptedModel(
        [
            call("convert", amount=100, source="EUR", target="USD"),
            "100 EUR is 108 USD.",
            call("convert", amount=100, source="EUR", target="JPY"),
            "100 EUR is 16200 JPY.",
        ]
    )
    first, second = await example.chat(example.build_agent(model), example.QUESTIONS)
    sent = [m for m in model.requests[2].messages if m.role != "system"]
    assert sent == [*first.messages, Message(role="user", content="And in yen?")]
    assert [m.content for m in sent if m.role == "tool"] == ["108.0"]
    assert '"convert"' in (sent[1].content or "")
    assert tool_outputs(second.trajectory.events) == [16200.0]
    assert capsys.readouterr().out == (
        "> How much is 100 EUR in USD?\n100 EUR is 108 USD.\n> And in yen?\n100 EUR is 16200 JPY.\n"
    )


def test_embedded_model_runs_on_the_small_model(tmp_path: Path) -> None:
    """`python examples/embedded_model.py --small`: the 0.5B looks the weather up, and its
    forecast, streamed field by field, is a valid `Forecast` with the tool's numbers."""
    out = run_python(str(EXAMPLES / "embedded_model.py"), "--small", cwd=tmp_path).stdout
    lines = out.splitlines()
    assert lines[0] == "weather → {'temperature_c': 21.5, 'sky': 'sunny'}"
    assert lines[-1].startswith("city='Lyon' temperature_c=21.5 summary=")
    assert "  {'city': 'Lyon'}" in lines  # a partial forecast, streamed
    assert len(list((tmp_path / "trajectories").rglob("*.jsonl"))) == 1
