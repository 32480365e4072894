"""mypy --strict rejects a flat option keyword of the wrong type.

Checked by tests/core/test_options.py (`mypy_report`: must fail with the error it names).
"""

import agentcore as ac


def use(model: ac.Model) -> None:
    ac.Agent(model, max_tokens="many")
