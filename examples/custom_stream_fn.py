"""A custom `stream_fn`: any function can be the model.

For each reply an agent calls `stream_fn(model, context, options)` (by default
`agentcore.stream`, which picks the provider from `model.api`). It returns an
`AssistantMessageEventStream` of the events every provider produces: `start`, then
`text_start`/`text_delta`/`text_end` (or `toolcall_*`) per block, then `done`. Here a rule-based
"model", written as a generator, adds up the numbers it is given, with a tool.
"""

import re

import agentcore as ac


def rule_based_model(model, context, options):
    events = reply_events(model, decide(context), options.signal)
    return ac.AssistantMessageEventStream.from_iterator(events)


def decide(context):
    """The "model": what to answer, given the conversation so far."""
    last = context.messages[-1]
    if isinstance(last, ac.ToolResultMessage):
        return [ac.TextContent(f"The sum is {last.text}.")]
    numbers = [int(n) for n in re.findall(r"-?\d+", last.text)]
    if len(numbers) < 2:
        return [ac.TextContent("Give me some numbers and I will add them up.")]
    call = ac.ToolCall(f"call_{len(context.messages)}", "add", {"numbers": numbers})
    return [ac.TextContent("Let me add those."), call]


def reply_events(model, blocks, signal):
    """Stream `blocks` word by word, as a provider would."""
    content = []

    def reply(**fields):  # every event carries the reply so far
        return ac.AssistantMessage(list(content), model.api, model.provider, model.id, **fields)

    yield ac.StartEvent(reply())
    for i, block in enumerate(blocks):
        if isinstance(block, ac.ToolCall):
            content.append(block)
            yield ac.ToolCallStartEvent(i, reply())
            yield ac.ToolCallEndEvent(i, block, reply())
            continue
        content.append(ac.TextContent(""))
        yield ac.TextStartEvent(i, reply())
        for word in re.findall(r"\S+\s*", block.text):
            if signal is not None and signal.aborted:  # stop promptly when the run is aborted
                yield ac.ErrorEvent("aborted", reply(stop_reason="aborted", error_message="abort"))
                return
            content[i] = ac.TextContent(content[i].text + word)
            yield ac.TextDeltaEvent(i, word, reply())
        yield ac.TextEndEvent(i, block.text, reply())
    reason = "toolUse" if any(isinstance(b, ac.ToolCall) for b in content) else "stop"
    yield ac.DoneEvent(reason, reply(stop_reason=reason))


def add(tool_call_id, args, signal, on_update):
    return ac.AgentToolResult([ac.TextContent(str(sum(args["numbers"])))])


def main() -> list[str]:
    numbers = {"type": "array", "items": {"type": "integer"}}
    adder = ac.AgentTool("add", "Add numbers.", {"type": "object", "required": ["numbers"],
                                                 "properties": {"numbers": numbers}}, add)
    # `api` names no registered provider: the agent's stream_fn serves every call.
    model = ac.Model("adder-1", "Rule-based adder", "rules", "local", base_url="none")
    agent = ac.Agent(model, tools=[adder], stream_fn=rule_based_model)
    lines = []
    for question in ["What is 19 + 23 + 100?", "Hello!"]:
        for message in agent.prompt(question).result():
            calls = [f"-> {c.name}({c.arguments})" for c in getattr(message, "tool_calls", [])]
            lines.append(f"{message.role:>10}: {' '.join([message.text, *calls])}")
    print(*lines, sep="\n")
    return lines


if __name__ == "__main__":
    main()
