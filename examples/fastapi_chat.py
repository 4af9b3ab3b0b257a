"""A chat backend: agentrt inside your own FastAPI app, each run streamed as server-sent events.

    python examples/fastapi_chat.py [MODEL]     # MODEL: local (default), local:small, openai
    curl -N localhost:8000/chat -H 'content-type: application/json' \\
        -d '{"message": "What is the weather in Lyon?"}'

POST /chat answers with one SSE event per agentrt event (`event: <type>`, `data: <its JSON>`),
the last `run_finished`, whose `output` is the typed `Forecast`. Needs the `server` extra
(`pip install 'agentrt[server]'`: FastAPI, uvicorn, sse-starlette).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel
from sse_starlette import EventSourceResponse, ServerSentEvent

from agentrt import Agent, Model, UserError


class Forecast(BaseModel):
    """What every run answers: the agent's `output_type`, checked by pydantic."""

    city: str
    temperature_c: float
    summary: str


_WEATHER = {"lyon": (21.5, "sunny"), "oslo": (-3.0, "snow"), "lima": (18.0, "cloudy")}


def weather(city: str) -> dict[str, float | str]:
    """Today's weather in a city.

    Args:
        city: The city's name, e.g. "Lyon".
    """
    # A real tool would call a weather service; the model sees what it returns (or raises).
    temperature, sky = _WEATHER[city.lower()]
    return {"temperature_c": temperature, "sky": sky}


def build_agent(model: Model) -> Agent[None, Forecast]:
    """The agent: its tools and instructions are code, no workspace folder."""
    return Agent(
        model,
        tools=[weather],
        instructions="You are a weather assistant. Look the weather up before you answer.",
        output_type=Forecast,
    )


class ChatRequest(BaseModel):
    message: str
    session_id: str | None = None
    """Runs of one session see its earlier turns, tool calls included (kept in memory;
    `AgentSettings(session_store=...)` keeps them in SQLite or PostgreSQL)."""


def create_app(agent: Agent[None, Forecast]) -> FastAPI:
    app = FastAPI()

    @app.post("/chat")
    async def chat(request: ChatRequest) -> EventSourceResponse:
        try:
            # Bad input (an empty message) fails here, before the stream: a 422, not a 200
            # whose stream breaks.
            run = agent.run(request.message, session_id=request.session_id)
        except UserError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc

        async def events() -> AsyncIterator[ServerSentEvent]:
            # `async with` closes the run if the client goes away mid-stream: the run is
            # cancelled, its tools too, and its trajectory still ends with `run_finished`.
            async with run:
                async for event in run:
                    yield ServerSentEvent(
                        event.model_dump_json(), event=event.type, id=str(event.seq)
                    )

        return EventSourceResponse(events())

    return app


if __name__ == "__main__":
    import uvicorn

    from agentrt.models.spec import load_model

    # "local" is the embedded Qwen2.5-Coder-1.5B, run in this process (no server, no key).
    model = load_model(sys.argv[1] if len(sys.argv) > 1 else "local")
    uvicorn.run(create_app(build_agent(model)), host="127.0.0.1", port=8000)
