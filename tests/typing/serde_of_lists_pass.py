"""mypy --strict infers `from_json(list[AgentMessage], ...)` and `to_dict(list)` types.

Checked by tests/package/test_errors_ux.py (`mypy_report`: must type-check).
"""

import agentcore as ac


def save(agent: ac.Agent) -> tuple[str, list[dict[str, object]]]:
    return ac.to_json(agent.state.messages), ac.to_dict(agent.state.messages)


def load(model: ac.Model, text: str) -> ac.Agent:
    messages: list[ac.AgentMessage] = ac.from_json(list[ac.AgentMessage], text)
    first: ac.UserMessage = ac.from_dict(ac.UserMessage, {"content": "hi"})
    return ac.Agent(model, messages=[first, *messages])
