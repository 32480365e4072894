"""The README quickstart, verbatim: an offline agent that calls a tool and answers.

`tests/cli/test_examples.py` checks that the body of `main()` is the README's code block.
"""

import agentcore as ac
from agentcore.testing import scripted_model, tool_call


def main() -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    with scripted_model([tool_call("add", {"a": 2, "b": 40}), "2 + 40 = 42"]) as fake:  # offline
        agent = ac.Agent(fake.model, system_prompt="Be brief.", tools=[add])  # or ac.get_model()
        run = agent.prompt("What is 2 + 40?")  # returns at once; the run goes on in the background
        print(run.text)                        # waits for the run: "2 + 40 = 42"
        run.raise_for_error()                  # a RunError if the model call had failed


if __name__ == "__main__":
    main()
