"""Evals: measure an agent on a small dataset, offline (API §26).

    python examples/evals.py

A scripted model stands in for a real one: it knows sums and one capital. Three cases are
scored by `Contains` (the answer holds `expected`), `ToolCalled` (the calculator was used for
the sum) and a function of our own; the report is printed, and written as a self-contained
HTML page beside this script's working directory (`eval_report.html`).
"""

import re

import agentcore as ac
from agentcore.evals import Case, Contains, Dataset, ToolCalled, evaluate
from agentcore.testing import scripted_model, tool_call


@ac.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def reply(context, options, model):
    last = context.messages[-1]
    if last.role == "toolResult":
        return f"It is {last.content[0].text}."
    numbers = re.findall(r"\d+", str(last.content))
    if len(numbers) == 2:
        return tool_call("add", {"a": int(numbers[0]), "b": int(numbers[1])})
    return "Paris." if "France" in str(last.content) else "I do not know."


def brief(case, result):
    """Short answers pass."""
    return len(result.text) <= 20 or f"{len(result.text)} characters"


def main():
    dataset = Dataset([
        Case("What is 2 + 40?", "42", name="sum"),
        Case("What is the capital of France?", "Paris", name="capital"),
        Case("What is the capital of Peru?", "Lima", name="peru"),
    ])
    with scripted_model([reply] * 4) as model:  # one call a case, two for the sum
        report = evaluate(lambda: ac.Agent(model.model, tools=[add]), dataset,
                          [Contains(), ToolCalled("add"), brief], progress=False)
    for name in ("Contains", "ToolCalled", "brief"):
        print(f"{name}: {report.pass_rate(name):.0%} passed")
    report.to_html("eval_report.html")
    print("report: eval_report.html")


if __name__ == "__main__":
    main()
