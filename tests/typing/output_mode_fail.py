"""mypy --strict rejects an `output_mode` that is neither "tool" nor "native".

Checked by tests/loop/test_structured_output.py (`mypy_report`: must fail, with this error).
"""

import agentcore as ac


def use(agent: ac.Agent) -> ac.AgentRun:
    return agent.prompt("x", output_type=int, output_mode="json")
