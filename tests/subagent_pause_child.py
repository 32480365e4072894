"""One step of a conversation whose child agent pauses for approval, in a process of its own.

    python subagent_pause_child.py DB SIDE prompt|resume

The parent agent `boss` has the child `cashier` as a tool; the cashier's `pay` needs approval
and the boss has no `approve`: `prompt` runs until the cashier's call waits, `resume` decides
it (approved) and runs to the end. Every execution of `pay` is logged to SIDE ("start", then
"end", each fsynced), so that a test counts them across processes. The scripted models answer
from the context alone, so any process rebuilds the same conversation. Prints "ready" once
imported (a test kills the step at a random moment after that), and once its step is done
it waits for its stdin to close before it exits, so that a step the test means to kill is
always killed: mid-step or after it, as the moment falls.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import agentcore as ac
from agentcore.sessions import SqliteSession
from agentcore.testing import scripted_model, tool_call

PAY_ID, PARENT_CALL = "pay-1", "c1"


def log(side: Path, line: str) -> None:
    with open(side, "a", encoding="utf-8") as file:
        file.write(line + "\n")
        file.flush()
        os.fsync(file.fileno())


def child_reply(context: ac.Context, options: Any, model: ac.Model) -> Any:
    last = context.messages[-1]
    if last.role == "toolResult":
        return f"child: {last.content[0].text}"  # type: ignore[union-attr]
    return tool_call("pay", {"amount": 5}, id=PAY_ID)


def parent_reply(context: ac.Context, options: Any, model: ac.Model) -> Any:
    last = context.messages[-1]
    if last.role == "toolResult":
        return f"boss: {last.content[0].text}"  # type: ignore[union-attr]
    return tool_call("cashier", {"input": "pay 5"}, id=PARENT_CALL)


def build(child_model: ac.Model, parent_model: ac.Model, side: Path,
          session: ac.Session) -> ac.Agent:
    @ac.tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        log(side, f"start {PAY_ID}")
        log(side, f"end {PAY_ID}")
        return f"paid {amount}"

    cashier = ac.Agent(child_model, name="cashier", tools=[pay])
    return ac.Agent(parent_model, name="boss", tools=[cashier.as_tool()], session=session)


def models() -> Any:
    return (scripted_model([child_reply] * 50, model="cashier-model", tokens_per_second=400),
            scripted_model([parent_reply] * 50, model="boss-model", tokens_per_second=400))


def main() -> None:
    db, side, step = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    child, parent = models()
    with child, parent, SqliteSession(db, "chat") as session:
        agent = build(child.model, parent.model, side, session)
        print("ready", flush=True)
        if step == "prompt":
            agent.prompt("go").wait()
        elif agent.state.pending_approvals:
            agent.continue_(approvals={PAY_ID: True}).wait()
        agent.close()
    sys.stdin.read()  # linger until the test closes stdin (or kills this process)


if __name__ == "__main__":
    main()
