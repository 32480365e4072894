"""The UX trial's small task: two tools (one fails), streamed text, a follow-up that keeps the
history, and the conversation saved and loaded. `tests/cli/test_assistant.py` is its unit test."""

import agentcore as ac
from agentcore.testing import Reply, scripted_model, tool_call


def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city name.
    """
    return f"{city}: 18°C, sunny"


def get_stock_price(symbol: str) -> float:
    """Latest stock price.

    Args:
        symbol: The ticker.
    """
    raise RuntimeError(f"market data service is down for {symbol}")


def make_agent(model: ac.Model, messages: list[ac.AgentMessage] | None = None) -> ac.Agent:
    return ac.Agent(model, system_prompt="Be brief.", tools=[get_weather, get_stock_price],
                    messages=messages or [])


def ask(agent: ac.Agent, prompt: str) -> None:
    for text in agent.prompt(prompt).text_stream():
        print(text, end="", flush=True)
    print()


SCRIPT: list[Reply] = [
    [tool_call("get_weather", {"city": "Paris"}), tool_call("get_stock_price", {"symbol": "ACME"})],
    "Paris is 18°C and sunny; I couldn't get the ACME price (the service is down).",
    "You asked about Paris.",
]


def main(path: str = "conversation.json") -> None:
    with scripted_model(SCRIPT, tokens_per_second=200) as fake:
        agent = make_agent(fake.model)
        ask(agent, "Weather in Paris and the ACME share price?")
        ask(agent, "Which city did I ask about?")
    with open(path, "w", encoding="utf-8") as f:
        f.write(ac.to_json(agent.state.messages))
    with open(path, encoding="utf-8") as f:
        restored = make_agent(fake.model, ac.from_json(list[ac.AgentMessage], f.read()))
    print(len(restored.state.messages), "messages restored")


if __name__ == "__main__":
    main()
