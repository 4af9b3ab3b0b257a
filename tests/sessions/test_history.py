"""The memory manager and the SQLite session store."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from agentrt import MemorySessionStore, Message, Turn
from agentrt.sessions.history import SUMMARY_HEADING, estimate_tokens, fit_history
from tests.helpers import MakeAgent


def conversation(turns: int, words: int = 10) -> list[Message]:
    """`turns` question/answer pairs, each message about `words` × 2 tokens long."""
    out: list[Message] = []
    for i in range(turns):
        out += [
            Message(role="user", content=f"question {i} " + "word " * words),
            Message(role="assistant", content=f"answer {i} " + "word " * words),
        ]
    return out


class TestFitHistory:
    def test_a_short_history_is_shown_whole(self) -> None:
        """Within the budget, nothing changes."""
        messages = conversation(3)
        assert fit_history(messages, 10_000) == messages

    def test_older_turns_are_summarised_within_the_budget(self) -> None:
        """The latest turns stay whole; the older ones become one line each, oldest first."""
        messages = conversation(10, words=40)
        fitted = fit_history(messages, 400)
        summary, *recent = fitted
        assert summary.role == "system"
        assert summary.content.startswith(SUMMARY_HEADING)
        assert recent == messages[-len(recent) :]
        assert 0 < len(recent) < len(messages)
        assert len(recent) % 2 == 0  # whole turns only
        older = (len(messages) - len(recent)) // 2
        lines = summary.content.splitlines()[1:]
        shown = [int(line.split()[3]) for line in lines if line.startswith("- User: question")]
        assert shown == list(range(older - len(shown), older))
        omitted = older - len(shown)
        assert lines[: len(lines) - len(shown)] == (
            [f"({omitted} earlier turns omitted)"] if omitted else []
        )
        assert sum(estimate_tokens(m.content) for m in fitted) <= 400

    def test_oldest_summary_lines_go_first_when_even_they_do_not_fit(self) -> None:
        """A tight budget drops the oldest lines and says how many."""
        messages = conversation(30, words=60)
        summary, *recent = fit_history(messages, 300)
        assert summary.content.splitlines()[1].endswith("earlier turns omitted)")
        assert summary.content.splitlines()[-1].startswith(
            f"- User: question {29 - len(recent) // 2} "
        )
        assert sum(estimate_tokens(m.content) for m in [summary, *recent]) <= 300

    def test_deterministic(self) -> None:
        """The same history gives the same prompt: runs replay."""
        messages = conversation(20, words=50)
        assert fit_history(messages, 500) == fit_history(messages, 500)


class TestSqliteSessionStore:
    async def test_named_results_are_its_data_frames(
        self, make_agent: MakeAgent, tmp_path: Path
    ) -> None:
        """Of what a session's tools keep by name, the data frames are stored (a new agent
        over the file gets them back); other values stay in the process that made them."""
        path = tmp_path / "sessions.sqlite"
        first = make_agent(["Kept."], session_store=path)
        frame = pd.DataFrame({"month": ["2024-01", "2024-02"], "units": [3, 5]})
        first.artifacts("s").update(trend=frame, connection=object())
        await first.run("Keep them.", session_id="s", strategy="direct")

        second = make_agent(["Seen."], session_store=path)
        assert (await second.sessions.load("s")).results == {
            "trend": {"columns": ["month", "units"], "data": [["2024-01", 3], ["2024-02", 5]]}
        }
        await second.run("Still there?", session_id="s", strategy="direct")
        assert set(second.artifacts("s")) == {"trend"}
        pd.testing.assert_frame_equal(second.artifacts("s")["trend"], frame)  # type: ignore[arg-type]

    async def test_an_agent_over_the_file_sees_an_earlier_agents_turns(
        self, make_agent: MakeAgent, tmp_path: Path
    ) -> None:
        """Two agents, one session file: the second's model is sent the first's turn."""
        path = tmp_path / "sessions.sqlite"
        first = make_agent(["Your name is Ada."], session_store=path)
        await first.run("My name is Ada.", session_id="s1", strategy="direct")
        second = make_agent(["You told me: Ada."], session_store=path)
        await second.run("What is my name?", session_id="s1", strategy="direct")
        sent = second.model.requests[0]  # type: ignore[attr-defined]
        assert [(m.role, m.content) for m in sent.messages[1:]] == [
            ("user", "My name is Ada."),
            ("assistant", "Your name is Ada."),
            ("user", "What is my name?"),
        ]


class TestAgentHistory:
    def test_the_memory_store_is_the_default(self, make_agent: MakeAgent) -> None:
        """Without `session_store`, sessions live in memory."""
        assert type(make_agent([]).sessions) is MemorySessionStore

    async def test_a_long_session_is_summarised_for_the_model(
        self, make_agent: MakeAgent, tmp_path: Path
    ) -> None:
        """Past `history_tokens`, the model is sent the summary and the latest turns."""
        agent = make_agent(["Noted."], history_tokens=400)
        await agent.sessions.append("s", Turn(run_id="r0", messages=conversation(10, words=20)), 0)
        await agent.run("And now?", session_id="s", strategy="direct")
        sent = agent.model.requests[0].messages  # type: ignore[attr-defined]
        assert sent[1].role == "system"
        assert sent[1].content.startswith(SUMMARY_HEADING)
        assert sent[-1] == Message(role="user", content="And now?")
        assert 3 + 2 <= len(sent) < 2 + 20 + 1  # a summary and some whole turns, not all
