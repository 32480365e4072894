"""Approvals: tool calls a person must allow first, answered now or after a restart.

`@ac.tool(requires_approval=True)` marks a tool whose every call waits for a person;
`requires_approval=fn` decides from the call's arguments (here: payments over 100). An agent
without an `approve` callback stops when its model asks for such a call: the run ends with the
calls in `run.pending_approvals` (nothing of that batch has run), and the agent waits until
`agent.continue_(approvals={call_id: True | False | "reason"})` decides every one of them.
With a session the waiting calls are on disk, so the answer may come from another process
days later: here a second `Agent` on the same session file stands for that restart.

`Agent(approve=fn)` decides while the run waits instead: `fn(tool_call, tool)` returns
`True` to allow, or a reason (or `False`) to deny. A denied call never runs; the model gets
the error result `denied: <reason>` and goes on. The model here is scripted (offline).
"""

import os
import tempfile

import agentcore as ac
from agentcore.providers.faux import faux_assistant_message, faux_tool_call, register_faux_provider

FILES = {"old.log", "cache.tmp", "notes.txt"}
PAID: list[str] = []


@ac.tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file to delete.
    """
    FILES.remove(path)
    return f"deleted {path}"


@ac.tool(requires_approval=lambda args: args["amount"] > 100)  # small payments just run
def transfer_money(to: str, amount: int) -> str:
    """Send money to someone.

    Args:
        to: Who gets it.
        amount: How much, in euros.
    """
    PAID.append(f"{amount} to {to}")
    return f"sent {amount} EUR to {to}"


def summary(context, options, model):
    """The scripted model's last word: what each call of its last batch came to."""
    results = []
    for message in reversed(context.messages):
        if isinstance(message, ac.AssistantMessage):
            break
        if isinstance(message, ac.ToolResultMessage):
            results.insert(0, message.text)
    return faux_assistant_message("; ".join(results))


def show(event, signal):
    if isinstance(event, ac.ToolApprovalRequestEvent):
        print(f"  asks: {event.tool_name}({event.args})")
    elif isinstance(event, ac.ToolExecutionEndEvent):
        print(f"  {event.tool_name} -> {event.result.content[0].text}")


def ask(call, tool):
    """An `approve` callback: a policy standing in for a person at a prompt."""
    allowed = tool.name == "delete_file" and call.arguments["path"].endswith(".tmp")
    print(f"  approve {call.name}({call.arguments})? {'yes' if allowed else 'no'}")
    return True if allowed else "only temporary files may go"


def main():
    FILES.update({"old.log", "cache.tmp", "notes.txt"})
    PAID.clear()
    faux = register_faux_provider()
    faux.set_responses([
        faux_assistant_message([faux_tool_call("delete_file", {"path": "old.log"}, id="call_1"),
                                faux_tool_call("transfer_money", {"to": "Bob", "amount": 250},
                                               id="call_2")]),
        summary,
        faux_assistant_message([faux_tool_call("delete_file", {"path": "cache.tmp"}, id="call_3"),
                                faux_tool_call("delete_file", {"path": "notes.txt"}, id="call_4"),
                                faux_tool_call("transfer_money", {"to": "Ann", "amount": 20},
                                               id="call_5")]),
        summary,
    ])
    tools = [delete_file, transfer_money]
    settings = {"tools": tools, "tool_execution": "sequential"}  # one call at a time: in order
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "chat.sqlite")
            print("1. no approve callback: the run stops")
            with ac.SqliteSession(path) as session:
                agent = ac.Agent(faux.get_model(), session=session, **settings)
                agent.subscribe(show)
                run = agent.prompt("Delete old.log and pay Bob 250.")
                print(f"  waiting: {[call.id for call in run.pending_approvals]}; "
                      f"files: {sorted(FILES)}")
                agent.close()

            print("2. later, a new agent on the same session: the calls still wait")
            with ac.SqliteSession(path) as session:
                agent = ac.Agent(faux.get_model(), session=session, **settings)
                agent.subscribe(show)
                for call in agent.state.pending_approvals:
                    print(f"  pending: {call.id} {call.name}({call.arguments})")
                try:
                    agent.prompt("Anything else?")
                except ValueError as exc:
                    print(f"  prompt() meanwhile: ValueError: {str(exc).split(';')[0]}")
                run = agent.continue_(approvals={"call_1": True,
                                                 "call_2": "over the daily limit"})
                print(f"assistant: {run.text}")
                agent.close()

        print("3. approve= decides while the run waits")
        with ac.Agent(faux.get_model(), approve=ask, **settings) as agent:
            agent.subscribe(show)
            run = agent.prompt("Tidy up and pay Ann 20.")
            print(f"assistant: {run.text}")
    finally:
        faux.unregister()
    print(f"files left: {sorted(FILES)}; paid: {PAID}")
    return FILES, PAID


if __name__ == "__main__":
    main()
