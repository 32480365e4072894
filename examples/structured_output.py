"""Structured output: the agent answers with a typed value instead of text (API §14).

The model is given a `final_result` tool whose schema comes from `City`; `run.output` is its
answer as a `City`. A bad answer is sent back to the model (here once), within
`output_retries`.
"""

import attrs

import agentcore as ac
from agentcore.testing import scripted_model, tool_call


@attrs.define
class City:
    """A city.

    Attributes:
        name: The city's name.
        population: How many people live there.
    """

    name: str
    population: int


def main() -> City:
    script = [
        tool_call("final_result", {"name": "Rome", "population": "about 3 million"}),  # invalid
        tool_call("final_result", {"name": "Rome", "population": 2_800_000}),
    ]
    with scripted_model(script) as fake:  # offline; or ac.get_model("openai", "gpt-4o-mini")
        agent = ac.Agent(fake.model, system_prompt="Answer with facts.")
        run = agent.prompt("What is the largest city in Italy?", output_type=City)
        city: City = run.output  # waits for the run; OutputValidationError if none was valid
    print(city)
    print(f"{len(run.result())} messages; {fake.call_count} model calls")
    return city


if __name__ == "__main__":
    main()
