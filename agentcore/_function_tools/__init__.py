"""Layer 1: `@tool`, which makes an `AgentTool` from a typed, documented function.

Builds on `_core` only; the loop and the providers never need it.
"""

from __future__ import annotations

from ._decorator import tool
from ._output import FINAL_RESULT, output_tool

__all__ = [
    "FINAL_RESULT",
    "output_tool",
    "tool",
]
