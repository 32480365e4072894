"""Tools: a parallel batch, then a sequential one, and the order of their events.

`@ac.tool` turns a plain function into a tool: the JSON Schema comes from the type hints, the
descriptions from the docstring, and a parameter named `signal` receives the run's abort signal.

The (scripted) model first asks for three weather reports at once. They run in parallel: all
three start before any ends, and they end in the order they finish. Then it saves two notes;
`save_note` is declared `execution_mode="sequential"`, so that batch runs one call at a time.
(`Agent(..., tool_execution="sequential")` would make every batch sequential.)
"""

from typing import Literal

import agentcore as ac
from agentcore.providers.faux import faux_assistant_message, faux_tool_call, register_faux_provider

REPORTS = {"Paris": (0.3, "18°C, cloudy"), "Tokyo": (0.1, "24°C, sunny"),
           "Lima": (0.2, "16°C, foggy")}
NOTES: list[str] = []


@ac.tool
def weather(city: Literal["Paris", "Tokyo", "Lima"], signal: ac.AbortSignal) -> str:
    """Current weather in a city.

    Args:
        city: The city to look up.
    """
    seconds, report = REPORTS[city]
    if signal.wait(seconds):  # a slow lookup that stops early when the run is aborted
        raise RuntimeError("aborted")
    return f"{city}: {report}"


@ac.tool(execution_mode="sequential")  # notes must keep their order
def save_note(text: str) -> str:
    """Append a note to the notebook.

    Args:
        text: The note.
    """
    NOTES.append(text)
    return f"saved note #{len(NOTES)}"


def show(event, signal):
    if isinstance(event, ac.ToolExecutionStartEvent):
        print(f"  start {event.tool_name} {event.args}")
    elif isinstance(event, ac.ToolExecutionEndEvent):
        print(f"  end   {event.tool_name} -> {event.result.content[0].text}")


def main() -> list[str]:
    NOTES.clear()
    faux = register_faux_provider()
    try:
        faux.set_responses([
            faux_assistant_message([faux_tool_call("weather", {"city": city})
                                    for city in ("Paris", "Tokyo", "Lima")]),
            faux_assistant_message("Tokyo is the warmest (24°C), Lima the coolest (16°C)."),
            faux_assistant_message([faux_tool_call("save_note", {"text": "Tokyo: 24°C"}),
                                    faux_tool_call("save_note", {"text": "Lima: 16°C"})]),
            faux_assistant_message("Both noted."),
        ])
        agent = ac.Agent(faux.get_model(), tools=[weather, save_note])
        agent.subscribe(show)
        for title, question in [("parallel", "What's the weather in Paris, Tokyo and Lima?"),
                                ("sequential", "Note the warmest and the coolest city.")]:
            print(f"{title} batch:")
            answer = agent.prompt(question).result()[-1]
            print(f"assistant: {answer.text}")
    finally:
        faux.unregister()
    print(f"notes: {NOTES}")
    return NOTES


if __name__ == "__main__":
    main()
