"""Choosing the tool-call format: by setting, or by the model's family (`auto`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from agentrt import Agent, AgentSettings, RunStartedEvent, ScriptedModel, Workspace
from agentrt.models.formats import (
    TOOL_FORMATS,
    ToolFormat,
    format_for_metadata,
    format_for_name,
    format_in_template,
    template_starts_in_reasoning,
)
from agentrt.models.local import SMALL_PACK, LocalModel
from agentrt.tool import tool


class TestByName:
    """A server's model is known by its name."""

    @pytest.mark.parametrize(
        ("name", "expected"),
        [
            ("Qwen/Qwen2.5-7B-Instruct", "hermes"),
            ("qwen3:8b", "hermes"),
            ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_coder"),
            ("qwen3.5-27b", "qwen3_coder"),
            ("meta-llama/Llama-3.1-8B-Instruct", "llama"),
            ("llama3.2:3b", "llama"),
            ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistral"),
            ("mixtral-8x7b", "mistral"),
            ("devstral_small", "mistral"),
            ("deepseek-ai/DeepSeek-V3", "deepseek"),
            ("zai-org/GLM-4.5-Air", "glm4"),
            ("moonshotai/Kimi-K2-Instruct", "kimi_k2"),
            ("MiniMaxAI/MiniMax-M2", "minimax"),
            ("openai/gpt-oss-20b", "harmony"),
            ("LiquidAI/LFM2-1.2B", "pythonic"),
            ("allenai/OLMo 2 Instruct", "pythonic"),
            ("some-model-nobody-knows", "hermes"),
        ],
    )
    def test_family_table(self, name: str, expected: ToolFormat) -> None:
        """Each family in the table, and an unknown name, map to their format."""
        assert format_for_name(name) == expected


class TestByTemplate:
    """A local model is known by what its chat template shows, else by its metadata's name."""

    @pytest.mark.parametrize(
        ("template", "expected"),
        [
            ("{{ '<tool_call>\\n' }}{{ tool_call | tojson }}", "hermes"),
            ("<tool_call>\n<function={{ name }}>\n<parameter={{ k }}>", "qwen3_coder"),
            ("<tool_call>{{ name }}<arg_key>{{ k }}</arg_key>", "glm4"),
            ("{{ '[TOOL_CALLS]' }}{{ calls | tojson }}", "mistral"),
            ("<|python_tag|>{{ call }}<|eom_id|>", "llama"),
            ("<|start|>assistant<|channel|>commentary", "harmony"),
            ("{{ '<|tool_calls_section_begin|>' }}", "kimi_k2"),
            ("<minimax:tool_call><invoke name=", "minimax"),
            ("<｜tool▁calls▁begin｜>", "deepseek"),
            ("<|tool_call_start|>[f(x=1)]<|tool_call_end|>", "pythonic"),
        ],
    )
    def test_markers(self, template: str, expected: ToolFormat) -> None:
        """The form the template writes calls in names the format."""
        assert format_in_template(template) == expected

    def test_metadata_without_a_telling_template_falls_back_to_the_name(self) -> None:
        """No call form in the template: `general.name`, then the architecture, decide."""
        plain = "{% for m in messages %}{{ m.content }}{% endfor %}"
        named = {"tokenizer.chat_template": plain, "general.name": "Mistral 7B Instruct v0.3"}
        assert format_for_metadata(named) == "mistral"
        assert format_for_metadata({"general.architecture": "olmo2"}) == "pythonic"
        assert format_for_metadata({"general.architecture": "gpt2"}) == "hermes"


class TestSetting:
    def test_auto_by_default_and_every_format_named(self) -> None:
        """`auto` is the default; each named format is accepted, anything else refused."""
        assert AgentSettings().tool_format == "auto"
        for name in TOOL_FORMATS:
            assert AgentSettings(tool_format=name).tool_format == name
        with pytest.raises(ValidationError, match="tool_format"):
            AgentSettings(tool_format="xml")


@tool
def lookup(city: str) -> str:
    """Weather for a city."""
    return city


def _agent(model: ScriptedModel, tmp_path: Path, tool_format: str) -> Agent:
    return Agent(
        model=model,
        tools=[lookup],
        settings=AgentSettings(trajectory_dir=tmp_path, tool_format=tool_format),
    )


class TestInARun:
    async def test_auto_goes_by_the_models_name_into_the_event_and_header(
        self, tmp_path: Path
    ) -> None:
        """The choice is recorded in `run_started` and in the trajectory header."""
        model = ScriptedModel(["done"], name="mistralai/Mistral-7B-Instruct-v0.3")
        result = await _agent(model, tmp_path, "auto").run("Weather in Lyon?")
        (started,) = [e for e in result.trajectory.events if isinstance(e, RunStartedEvent)]
        assert started.tool_format == "mistral"
        assert result.trajectory.header.tool_format == "mistral"

    async def test_the_prompt_asks_for_the_chosen_format(self, tmp_path: Path) -> None:
        """A model that writes calls as text is shown its format's example, not Hermes'."""
        model = ScriptedModel(["done"], name="qwen2.5")
        await _agent(model, tmp_path, "pythonic").run("Weather in Lyon?")
        system = model.requests[-1].messages[0].content
        assert '[TOOL_NAME(ARGUMENT="VALUE")]' in system
        assert "<tool_call>" not in system

    async def test_a_native_tool_model_keeps_the_native_prompt(self, tmp_path: Path) -> None:
        """Tools given natively: no call form is described, whatever the format."""
        model = ScriptedModel(["done"], name="llama-3.1", native_tools=True)
        await _agent(model, tmp_path, "auto").run("Weather in Lyon?")
        system = model.requests[-1].messages[0].content
        assert "Call a tool only when it does what the question asks" in system
        assert "TOOL_NAME" not in system
        assert "lookup_elevation" not in system

    @pytest.mark.parametrize(("fmt", "shown"), [("hermes", True), ("pythonic", False)])
    async def test_a_model_writing_calls_as_text_is_shown_several_in_its_format(
        self, tmp_path: Path, fmt: ToolFormat, shown: bool
    ) -> None:
        """Native tools, calls written as text (`calls_in_text`, the embedded model): one reply
        of two calls in the model's format, where the workspace has one for that format."""
        model = ScriptedModel(["done"], name="qwen2.5", native_tools=True)
        model.calls_in_text = True  # type: ignore[attr-defined]
        await _agent(model, tmp_path, fmt).run("Weather in Lyon and Lima?")
        system = model.requests[-1].messages[0].content
        assert ('<tool_call>\n{"name": "lookup_elevation"' in system) is shown
        assert "Call a tool only when it does what the question asks" in system


@pytest.mark.parametrize("name", TOOL_FORMATS)
def test_every_format_has_a_prompt_partial(name: ToolFormat) -> None:
    """react.j2 renders for each format, with one example call using the placeholder name."""
    prompt = Workspace().render(
        "react.j2",
        instructions="",
        tools=[lookup.definition],
        native_tools=False,
        tool_format=name,
    )
    assert "TOOL_NAME" in prompt
    assert "Their results come back in the next message." in prompt


# Chat templates in the styles of the thinking families, written for these tests: each shows
# only how its generation prompt ends.
R1_STYLE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}<｜User｜>{{ m['content'] }}"
    "{% else %}<｜Assistant｜>{{ m['content'] }}<｜end▁of▁sentence｜>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<｜Assistant｜><think>\n{% endif %}"
)
QWEN3_STYLE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)
QWEN3_THINKING_STYLE = QWEN3_STYLE.replace("assistant\n", "assistant\n<think>\n")


class TestTemplatesThatOpenThink:
    def test_a_generation_prompt_ending_in_think_opens_it(self) -> None:
        assert template_starts_in_reasoning(R1_STYLE)
        assert template_starts_in_reasoning(QWEN3_THINKING_STYLE)

    def test_a_closed_or_absent_block_opens_nothing(self) -> None:
        """Qwen3 leaves the choice to the model (an empty block when thinking is off); a
        template that shows `<think>` in its history only is no opening either."""
        assert not template_starts_in_reasoning(QWEN3_STYLE)
        closed = QWEN3_STYLE.replace("assistant\n", "assistant\n<think>\n\n</think>\n")
        assert not template_starts_in_reasoning(closed)
        history = "{% for m in messages %}<think>{{ m.content }}{% endfor %}<|assistant|>"
        assert not template_starts_in_reasoning(history)

    def test_a_template_that_fails_opens_nothing(self) -> None:
        assert not template_starts_in_reasoning("{{ raise_exception('no system role') }}")
        assert not template_starts_in_reasoning("{% if %}")

    async def test_the_embedded_model_reads_it_when_it_loads(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Known once the weights are loaded (a stub here), which is before its first answer."""
        loaded = SimpleNamespace(metadata={"tokenizer.chat_template": R1_STYLE})
        model = LocalModel(SMALL_PACK)
        monkeypatch.setattr(model, "_load_blocking", lambda: loaded)
        assert model.starts_in_reasoning is False
        await model.load()
        assert model.starts_in_reasoning is True
