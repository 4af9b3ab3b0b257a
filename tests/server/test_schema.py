"""The OpenAPI schema, fuzzed by Schemathesis against the live server: no request gets a 5xx,
and every response matches what the schema says of it.

Each operation is driven through its Hypothesis strategy directly (Schemathesis' lazy pytest
loader does not run under this pytest), valid requests and invalid ones alike.
"""

from __future__ import annotations

from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import positive_data_acceptance

from agentrt import Agent, AgentSettings, Workspace
from agentrt.server import ServerSettings, create_app
from tests.server.serving import LiveServer, PlainModel

TOKEN = "fuzz-token"
EXAMPLES = 15
"""Per operation and mode: about 200 requests in all."""


def test_no_request_gets_a_server_error(workspace: Workspace, tmp_path: Path) -> None:
    """Valid and invalid requests to every operation get answers the schema describes."""
    agent = Agent(
        workspace=workspace, model=PlainModel(), settings=AgentSettings(trajectory_dir=tmp_path)
    )
    app = create_app(agent, ServerSettings(tokens=(TOKEN,), max_runs=64, max_runs_per_token=64))
    with LiveServer(app) as server:
        schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert {f"{op.method.upper()} {op.path}" for op in operations} == {
            "POST /runs",
            "GET /runs/{run_id}",
            "GET /runs/{run_id}/events",
            "POST /runs/{run_id}/cancel",
            "POST /runs/{run_id}/approvals",
            "GET /sessions/{session_id}",
            "POST /sessions/{session_id}/messages",
            "POST /ag-ui",
            "GET /trajectories",
        }
        strategies = st.one_of(
            *(
                op.as_strategy(generation_mode=mode)
                for op in operations
                for mode in schemathesis.GenerationMode
                # An operation without parameters has no invalid requests to generate.
                if mode.is_positive or op.path != "/trajectories"
            )
        )

        @given(case=strategies)
        @settings(
            max_examples=EXAMPLES * len(operations) * 2,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def check(case: schemathesis.Case) -> None:
            # POST /ag-ui's body is AG-UI's own `RunAgentInput` schema, which allows what
            # agentrt refuses with a 422 its description lists (ids no file can be named by,
            # no user message, client tools, …): every other check holds for it.
            lenient = [positive_data_acceptance] if case.path == "/ag-ui" else []
            case.call_and_validate(
                headers={"Authorization": f"Bearer {TOKEN}"}, excluded_checks=lenient
            )

        check()
