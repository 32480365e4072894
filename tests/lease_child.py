"""One process of the two that resume the same approval pause at once (API §27).

    python lease_child.py STORE SESSION LOG

STORE is a SQLite file or a `postgresql://` URL, SESSION the session id. The agent's `pay` tool
needs approval; each of its runs logs `start <id> <pid>` and `end <id> <pid>` to LOG, each
fsynced. The process opens the agent, prints `ready`, waits for a line on stdin (so that the
test starts both processes' resumes together), then resumes the pause with every waiting call
approved and prints what happened: `ran` (it drove the resume), `busy` (another process held
the session's lease), `moved on` (by the time it held the lease, the pause had been resumed
elsewhere), `nothing` (it opened the session with nothing waiting).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from approval_child import record

import agentcore as ac
from agentcore.testing import ScriptedModel, scripted_model, tool_call

CALLS = ("pay-1", "pay-2")


def reply(context: ac.Context, options: Any, model: ac.Model) -> Any:
    """Asks to pay twice, then answers: the same reply in every process."""
    if any(isinstance(m, ac.AssistantMessage) for m in context.messages):
        return "paid"
    return [tool_call("pay", {"n": n}, id=call) for n, call in enumerate(CALLS, 1)]


def scripted() -> ScriptedModel:
    return scripted_model([reply] * 8)


def pay_tool(log: Path) -> ac.AgentTool:
    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any,
                ) -> ac.AgentToolResult:
        record(log, f"start {call_id} {os.getpid()}")
        time.sleep(0.03)
        record(log, f"end {call_id} {os.getpid()}")
        return ac.AgentToolResult([ac.TextContent(f"paid {args['n']}")])

    return ac.AgentTool("pay", "Pay.", {"type": "object", "properties": {
        "n": {"type": "integer"}}}, execute, requires_approval=True)


def open_store(spec: str, session_id: str) -> Any:
    if spec.startswith(("postgresql://", "postgres://")):
        from agentcore.sessions import PostgresSession

        return PostgresSession(spec, session_id)
    return ac.SqliteSession(spec, session_id)


def agent(spec: str, session_id: str, log: Path, model: ac.Model) -> ac.Agent:
    return ac.Agent(model, tools=[pay_tool(log)], session=open_store(spec, session_id))


def main() -> None:
    spec, session_id, log = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    with scripted() as fake:
        resumer = agent(spec, session_id, log, fake.model)
        print("ready", flush=True)
        sys.stdin.readline()
        waiting = resumer.state.pending_approvals
        outcome = "nothing"
        if waiting:
            try:
                resumer.continue_(approvals={c.id: True for c in waiting}).raise_for_error()
                outcome = "ran"
            except ac.SessionBusyError:
                outcome = "busy"
            except ValueError:
                outcome = "moved on"
        resumer.close()
        resumer.session.close()  # type: ignore[union-attr]
        print(outcome, flush=True)


if __name__ == "__main__":
    main()
