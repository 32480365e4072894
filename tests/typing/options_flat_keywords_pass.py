"""mypy --strict sees the flat option keywords as typed keywords and attributes.

Checked by tests/core/test_options.py (`mypy_report`: must type-check).
"""

import agentcore as ac


def use(model: ac.Model) -> int | None:
    config = ac.AgentLoopConfig(model=model, max_tokens=5, transport="sse")
    agent = ac.Agent(model, max_tokens=5, session_id="s", timeout=2.0)
    agent.max_tokens = 7
    tokens: int | None = config.max_tokens
    return tokens if tokens is not None else agent.max_tokens
