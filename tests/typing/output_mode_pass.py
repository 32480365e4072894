"""mypy --strict sees `output_mode` and `reset_tool_choice` as typed keywords (API §18).

Checked by tests/loop/test_structured_output.py (`mypy_report`: must type-check).
"""

import agentcore as ac
from agentcore.batch import run_batch


def use(agent: ac.Agent, model: ac.Model) -> ac.AgentRun:
    config = ac.AgentLoopConfig(model=model, output_type=int, output_mode="native",
                                tool_choice="required", reset_tool_choice=True)
    agent.reset_tool_choice = config.reset_tool_choice
    agent.tool_choice = "auto"
    run_batch(lambda: agent, ["x"], output_type=int, output_mode="native")
    return agent.prompt("x", output_type=int, output_mode="native")
