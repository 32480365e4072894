"""The low-level loop: `run_agent_loop` blocks and hands every event to a sink you pass."""

import agentcore as ac
from agentcore.providers.faux import faux_assistant_message, faux_tool_call, register_faux_provider


def add(tool_call_id, args, signal, on_update):
    return ac.AgentToolResult([ac.TextContent(str(args["a"] + args["b"]))])


def main() -> str:
    adder = ac.AgentTool(
        "add", "Add two integers.",
        {"type": "object", "required": ["a", "b"],
         "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        add,
    )
    faux = register_faux_provider()
    try:
        faux.set_responses([faux_assistant_message([faux_tool_call("add", {"a": 2, "b": 40})]),
                            faux_assistant_message("2 + 40 = 42")])
        messages = ac.run_agent_loop(
            [ac.UserMessage("What is 2 + 40?")], ac.AgentContext("Be brief.", [], [adder]),
            ac.AgentLoopConfig(model=faux.get_model()), emit=lambda event: print(event.type),
        )
    finally:
        faux.unregister()
    print(messages[-1].text)
    return messages[-1].text


if __name__ == "__main__":
    main()
