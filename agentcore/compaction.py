"""Compaction: keep a long conversation within the model's context window.

`compact(messages, model)` has the model summarise the older part of a transcript and returns
one `CompactionSummaryMessage` followed by the recent messages, cut at a turn boundary (never
between a tool call and its result). `estimate_tokens(messages)` is the estimate it goes by
(characters / 4, images 1,200 tokens each). `Agent(auto_compact=CompactionSettings())` does it
within a run, when the context would outgrow the window and after an overflow error::

    from agentcore import Agent
    from agentcore.compaction import CompactionSettings, compact, estimate_tokens

    agent = Agent(model, auto_compact=CompactionSettings(reserve_tokens=16_384,
                                                         keep_recent_tokens=20_000))

    # or by hand, between runs:
    if estimate_tokens(agent.messages) > 100_000:
        agent.messages = compact(agent.messages, agent.model, keep_recent_tokens=20_000)
"""

from __future__ import annotations

from ._agent import CompactionSettings, compact, estimate_tokens

__all__ = ["CompactionSettings", "compact", "estimate_tokens"]
