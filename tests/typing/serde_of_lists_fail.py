"""mypy --strict knows what `from_json(list[AgentMessage], ...)` returns, and that it is no int.

Checked by tests/package/test_errors_ux.py (`mypy_report`: must fail with the error it names).
"""

import agentcore as ac


def load(text: str) -> int:
    return ac.from_json(list[ac.AgentMessage], text)
