"""The reasoning splitter: `<think>` blocks, prompts that open the block, harmony channels,
prose that only looks like markup, and chunking."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrt.parsing import ContentPiece, ReasoningPiece, ReasoningSplitter, SplitPiece
from agentrt.parsing.reasoning import HEADER_LIMIT

Pieces = list[tuple[str, str]]
"""(kind, text) with kind "r" for reasoning and "c" for content; consecutive texts merged."""


def normalize(pieces: Iterable[SplitPiece]) -> Pieces:
    out: Pieces = []
    for piece in pieces:
        kind = "r" if isinstance(piece, ReasoningPiece) else "c"
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + piece.text)
        else:
            out.append((kind, piece.text))
    return out


def split_chunks(chunks: Iterable[str], starts_in_reasoning: bool = False) -> Pieces:
    splitter = ReasoningSplitter(starts_in_reasoning)
    pieces: list[SplitPiece] = []
    for chunk in chunks:
        pieces += splitter.feed(chunk)
    pieces += splitter.close()
    assert all(p.text for p in pieces)
    return normalize(pieces)


def split(text: str, starts_in_reasoning: bool = False) -> Pieces:
    whole = split_chunks([text], starts_in_reasoning)
    # Every example is also checked fed one character at a time.
    assert split_chunks(text, starts_in_reasoning) == whole
    return whole


class TestThinkBlocks:
    def test_block_then_answer(self) -> None:
        """The block is reasoning, its tags gone; what follows is content."""
        assert split("<think>2 and 2 make 4.</think>\n\nThe answer is 4.") == [
            ("r", "2 and 2 make 4."),
            ("c", "\n\nThe answer is 4."),
        ]

    def test_several_blocks_anywhere(self) -> None:
        """Blocks may come between pieces of the answer, any number of times."""
        text = "First.<think>one</think> Second.<think>two</think> Third."
        assert split(text) == [
            ("c", "First."),
            ("r", "one"),
            ("c", " Second."),
            ("r", "two"),
            ("c", " Third."),
        ]

    def test_unclosed_block_is_reasoning_to_the_end(self) -> None:
        """A stream that stops while thinking has no content after the tag."""
        assert split("Hm.<think>still thinking about <tool_call>") == [
            ("c", "Hm."),
            ("r", "still thinking about <tool_call>"),
        ]

    def test_tool_call_inside_a_block_is_reasoning(self) -> None:
        """A call drafted while thinking never reaches the content (nor the tool-call parser)."""
        text = '<think>I could call <tool_call>{"name": "add"}</tool_call></think>It is 4.'
        assert split(text) == [
            ("r", 'I could call <tool_call>{"name": "add"}</tool_call>'),
            ("c", "It is 4."),
        ]

    def test_empty_block(self) -> None:
        """Qwen3 writes an empty block when thinking is off: nothing is left of it."""
        assert split("<think>\n\n</think>\n\nHello.") == [("r", "\n\n"), ("c", "\n\nHello.")]
        assert split("<think></think>Hello.") == [("c", "Hello.")]

    def test_repeated_opening_tag_inside_a_block_is_dropped(self) -> None:
        assert split("<think>a<think>b</think>c") == [("r", "ab"), ("c", "c")]


class TestStartsInReasoning:
    def test_closing_tag_ends_the_reasoning(self) -> None:
        """DeepSeek-R1's template opens the block in the prompt: only `</think>` is streamed."""
        text = "Let me add them.\n</think>\n\nThe sum is 5."
        assert split(text, starts_in_reasoning=True) == [
            ("r", "Let me add them.\n"),
            ("c", "\n\nThe sum is 5."),
        ]

    def test_never_closed_is_all_reasoning(self) -> None:
        assert split("thinking, thinking", starts_in_reasoning=True) == [
            ("r", "thinking, thinking")
        ]

    def test_model_repeating_the_opening_tag(self) -> None:
        """Some models write `<think>` although the prompt holds it already."""
        text = "<think>\nok</think>Done."
        assert split(text, starts_in_reasoning=True) == [("r", "\nok"), ("c", "Done.")]

    def test_each_stream_starts_in_reasoning_again(self) -> None:
        """After `close`, the splitter is back in its initial state."""
        splitter = ReasoningSplitter(starts_in_reasoning=True)
        first = splitter.feed("a</think>b") + splitter.close()
        second = splitter.feed("c</think>d") + splitter.close()
        assert normalize(first) == [("r", "a"), ("c", "b")]
        assert normalize(second) == [("r", "c"), ("c", "d")]

    def test_without_the_setting_a_stray_closing_tag_is_dropped(self) -> None:
        """Without `starts_in_reasoning` the text before `</think>` has streamed as content
        already; the tag itself is still never shown."""
        assert split("thought</think>answer") == [("c", "thoughtanswer")]


class TestLookalikes:
    def test_unfinished_or_other_tags_are_prose(self) -> None:
        """Only the exact tags count: `<think` not followed by `>` is text, and so are other
        tags, comparisons and HTML."""
        for text in (
            "if a <think b then",
            "use a <thinking> tag",
            "<Think>capitals differ</Think>",
            "x < y and y > z",
            "<b>bold</b> </thinker>",
            "ends with <thin",
            "ends with </think",
        ):
            assert split(text) == [("c", text)], text

    def test_harmony_tokens_without_a_header_are_content(self) -> None:
        """Tokens that only make sense inside a message (`<|message|>`, `<|call|>`) are left
        for the tool-call parser."""
        text = "a <|message|> b <|call|> c <|constrain|>"
        assert split(text) == [("c", text)]

    def test_overlong_header_is_content(self) -> None:
        """A harmony opening token in prose, never followed by `<|message|>`, hides nothing:
        after HEADER_LIMIT characters it is text, verbatim."""
        text = "Write <|start|> to begin. " + "word " * 100 + "<think>t</think>!"
        pieces = split(text)
        assert "".join(t for k, t in pieces if k == "c").startswith("Write <|start|> to begin.")
        assert pieces[-2:] == [("r", "t"), ("c", "!")]

    def test_header_closed_exactly_at_the_limit(self) -> None:
        header = "<|channel|>analysis" + " " * (HEADER_LIMIT - 30) + "<|message|>"
        assert len(header) == HEADER_LIMIT
        assert split(header + "thought<|end|>ok") == [("r", "thought"), ("c", "ok")]
        longer = header.replace("analysis", "analysis ")
        assert split(longer + "thought") == [("c", longer + "thought")]

    def test_unclosed_header_at_end_is_content(self) -> None:
        assert split("<|start|>assistant<|channel|>fin") == [
            ("c", "<|start|>assistant<|channel|>fin")
        ]


class TestHarmony:
    def test_analysis_then_final(self) -> None:
        """gpt-oss: the analysis channel is reasoning, the final one content; headers and
        end tokens are dropped."""
        text = (
            "<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|>"
            "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>"
        )
        assert split(text) == [("r", "User asks 2+2. Answer 4."), ("c", "2 + 2 = 4.")]

    def test_whole_message_with_role_header(self) -> None:
        text = "<|start|>assistant<|channel|>analysis<|message|>hmm<|end|>"
        assert split(text) == [("r", "hmm")]

    def test_preamble_on_commentary_is_content(self) -> None:
        """A commentary message without a recipient is a preamble for the user."""
        text = "<|channel|>commentary<|message|>Checking the weather.<|end|>"
        assert split(text) == [("c", "Checking the weather.")]

    def test_call_passes_through_verbatim(self) -> None:
        """A message to a recipient is a tool call: it stays whole for the tool-call parser,
        in either place the recipient may be written."""
        on_channel = (
            "<|start|>assistant<|channel|>commentary to=functions.get_weather "
            '<|constrain|>json<|message|>{"city": "Oslo"}<|call|>'
        )
        in_role = (
            "<|start|>assistant to=functions.get_weather<|channel|>commentary json"
            '<|message|>{"city": "Oslo"}<|call|>'
        )
        for call in (on_channel, in_role):
            text = "<|channel|>analysis<|message|>Need weather.<|end|>" + call
            assert split(text) == [("r", "Need weather."), ("c", call)]

    def test_analysis_ended_by_the_next_header(self) -> None:
        """A model that leaves out `<|end|>` still starts a new message with its header."""
        text = "<|channel|>analysis<|message|>a<|start|>assistant<|channel|>final<|message|>b"
        assert split(text) == [("r", "a"), ("c", "b")]

    def test_analysis_unclosed_at_end(self) -> None:
        assert split("<|channel|>analysis<|message|>still going") == [("r", "still going")]

    def test_think_tags_inside_analysis_are_reasoning_text(self) -> None:
        text = "<|channel|>analysis<|message|>a</think>b<|end|>c"
        assert split(text) == [("r", "a</think>b"), ("c", "c")]


class TestChunking:
    def test_tag_cut_anywhere(self) -> None:
        """A tag split at every possible point is still one tag."""
        text = "a<think>b</think>c<|channel|>analysis<|message|>d<|end|>e"
        whole = split(text)
        for k in range(len(text) + 1):
            assert split_chunks([text[:k], text[k:]]) == whole


def chunks(text: str, data: st.DataObject) -> list[str]:
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FRAGMENTS = [
    "<think>",
    "</think>",
    "<think",
    "</thi",
    "<|start|>",
    "assistant",
    "<|channel|>",
    "analysis",
    "final",
    "commentary",
    " to=functions.f",
    "<|constrain|>",
    "<|message|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|",
    "|>",
    "<",
    ">",
    "/",
    "|",
    "\n",
    " ",
    "x",
    "日",
]


@FAST
@given(
    st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=3), max_size=40),
    st.booleans(),
    st.data(),
)
def test_fragment_soup_is_chunking_invariant(
    fragments: list[str], starts_in_reasoning: bool, data: st.DataObject
) -> None:
    text = "".join(fragments)
    whole = split(text, starts_in_reasoning)
    assert split_chunks(chunks(text, data), starts_in_reasoning) == whole
    # Nothing is invented: the pieces are the text with markup taken out.
    assert sum(len(t) for _, t in whole) <= len(text)


@FAST
@given(st.lists(st.text(alphabet="ab <>/\n", max_size=8), max_size=8), st.data())
def test_generated_blocks_are_split_exactly(parts: list[str], data: st.DataObject) -> None:
    """Prose with no tag in it, alternating with blocks: the splitter gives back exactly the
    prose as content and the blocks' insides as reasoning."""
    parts = [p.replace("<", "&") for p in parts]  # no tag can form inside a part
    text = "".join(f"<think>{p}</think>" if k % 2 else p for k, p in enumerate(parts))
    expected = [("r" if k % 2 else "c", p) for k, p in enumerate(parts) if p]
    merged: Pieces = []
    for kind, part in expected:
        if merged and merged[-1][0] == kind:
            merged[-1] = (kind, merged[-1][1] + part)
        else:
            merged.append((kind, part))
    assert split_chunks(chunks(text, data)) == merged
    assert split(text) == merged


def test_content_pieces_are_content_type() -> None:
    splitter = ReasoningSplitter()
    assert splitter.feed("<think>a</think>b") == [ReasoningPiece("a"), ContentPiece("b")]
