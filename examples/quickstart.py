"""The README quickstart: an offline agent that calls a tool and answers."""

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
        agent = ac.Agent(faux.get_model(), system_prompt="Be brief.", tools=[adder])
        run = agent.prompt("What is 2 + 40?")
        for event in run:
            print(event.type)
        answer = run.result()[-1].text
    finally:
        faux.unregister()
    print(answer)
    return answer


if __name__ == "__main__":
    main()
