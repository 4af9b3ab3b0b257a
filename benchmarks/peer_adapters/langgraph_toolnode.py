"""LangGraph: the ReAct loop as LangGraph documents it (a StateGraph over MessagesState, the
model node, a prebuilt ToolNode, `tools_condition` between them), no checkpointer, driven by a
scripted langchain-core chat model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from peer_adapters import (
    ANSWER,
    COUNTS,
    TOOLS_PER_TURN,
    TURNS,
    Run,
    check_answer,
    noop,
    sleep_ms,
    turn_calls,
)


class ScriptedChatModel(BaseChatModel):
    """Answers with the workload's tool calls for the turn the conversation is at."""

    tool_ms: int
    per_turn: int

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(  # type: ignore[override]
        self, tools: Sequence[BaseTool], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        # As a real chat model does: the tool schemas travel with every request.
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        COUNTS.model_calls += 1
        turn = sum(isinstance(m, AIMessage) for m in messages)
        if turn < TURNS:
            calls = [
                {"name": name, "args": args, "id": f"call_{turn}_{k}"}
                for k, (name, args) in enumerate(turn_calls(turn, self.tool_ms, self.per_turn))
            ]
            message = AIMessage(content="", tool_calls=calls)
        else:
            message = AIMessage(content=ANSWER)
        message.usage_metadata = {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20}
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply(messages)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply(messages)


def build(tool_ms: int, per_turn: int = TOOLS_PER_TURN) -> Run:
    tools = [tool(sleep_ms if tool_ms else noop)]
    model = ScriptedChatModel(tool_ms=tool_ms, per_turn=per_turn).bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    app = graph.compile()

    async def run() -> None:
        state = await app.ainvoke(MessagesState(messages=[HumanMessage("bench")]))
        check_answer(state["messages"][-1].content, "LangGraph")

    return run
