"""`agentcore.evals`: cases, datasets read from JSON Lines, and each evaluator on its own (API §26).

Evaluators are called directly on a `RunResult` here; only `Judge` runs a model (scripted).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcore import AssistantMessage, Cost, ToolCall, Usage, UserMessage
from agentcore.evals import (
    Case,
    Contains,
    Dataset,
    Equals,
    Judge,
    MaxCost,
    MaxDuration,
    Regex,
    RunResult,
    Score,
    ToolCalled,
    evaluator_name,
)
from agentcore.testing import scripted_model, tool_call

CASE = Case("What is 2 + 2?", expected="4")


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- cases and datasets ---------------------------------------------------------------------

def test_a_case_without_input_raises_naming_the_field() -> None:
    with pytest.raises(TypeError, match="input"):
        Case()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="input"):
        Case(None)  # type: ignore[arg-type]


def test_a_dataset_names_its_unnamed_cases_by_position() -> None:
    dataset = Dataset([Case("a"), Case("b", name="mine"), Case("c")])
    assert [c.name for c in dataset] == ["case-1", "mine", "case-3"]
    assert len(dataset) == 3


def test_from_jsonl_reads_every_key_and_skips_blank_lines(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "cases.jsonl", [
        json.dumps({"input": "hi", "expected": "hello", "name": "greet",
                    "metadata": {"tag": "x"}}),
        "",
        "   ",
        json.dumps({"input": [{"role": "user", "content": "a list", "timestamp": 1}]}),
    ])
    dataset = Dataset.from_jsonl(path)
    first, second = dataset.cases
    assert first == Case("hi", "hello", "greet", {"tag": "x"})
    assert second.name == "case-2"
    assert isinstance(second.input, list)
    assert isinstance(second.input[0], UserMessage)


@pytest.mark.parametrize(("bad", "says"), [
    ("{not json", "line 3"),
    ('{"expected": "no input"}', "line 3: .*input"),
    ('["a list"]', "line 3: expected a JSON object"),
    ('{"input": "x", "colour": "red"}', "line 3: unknown keys"),
    ('{"input": 7}', "line 3"),
])
def test_from_jsonl_names_the_line_of_a_bad_case(tmp_path: Path, bad: str, says: str) -> None:
    path = write_lines(tmp_path / "cases.jsonl", ['{"input": "a"}', "", bad, '{"input": "b"}'])
    with pytest.raises(ValueError, match=says):
        Dataset.from_jsonl(path)


def test_a_dataset_takes_only_cases() -> None:
    with pytest.raises(TypeError, match="item 2"):
        Dataset([Case("a"), "b"])  # type: ignore[list-item]


# --- evaluators -----------------------------------------------------------------------------

def answer(text: str = "", output: object = None, **kw: object) -> RunResult:
    return RunResult(text=text, output=output, **kw)  # type: ignore[arg-type]


def test_equals_compares_the_text_or_the_output_with_expected_or_its_value() -> None:
    assert Equals()(CASE, answer("4")) is True
    assert Equals()(CASE, answer("5")) == "expected '4', got '5'"
    assert Equals(5)(CASE, answer("the text", output=5)) is True  # output over text
    assert Equals("4")(CASE, answer("4", output={"x": 1})) != True  # noqa: E712


def test_contains_looks_in_a_string_a_list_or_falls_back_to_text() -> None:
    assert Contains()(CASE, answer("It is 4.")) is True
    assert "not in" in str(Contains()(CASE, answer("five")))
    assert Contains("b")(CASE, answer(output=["a", "b"])) is True
    assert Contains(4)(CASE, answer("it is 4")) is True  # 4 in "..." is a TypeError: as text


def test_regex_searches_the_text() -> None:
    assert Regex(r"\b4\b")(CASE, answer("It is 4.")) is True
    assert "no match" in str(Regex(r"^\d+$")(CASE, answer("four")))


def tool_run(*calls: ToolCall) -> RunResult:
    message = AssistantMessage(list(calls), api="faux", provider="faux", model="m")
    return RunResult(messages=[UserMessage("q"), message])


def test_tool_called_finds_a_call_with_the_given_arguments() -> None:
    run = tool_run(ToolCall("c1", "search", {"q": "cats", "limit": 3}))
    assert ToolCalled("search")(CASE, run) is True
    assert ToolCalled("search", {"q": "cats"})(CASE, run) is True
    assert "never with" in str(ToolCalled("search", {"q": "dogs"})(CASE, run))
    assert ToolCalled("add")(CASE, run) == "add was not called"


def test_max_cost_and_max_duration() -> None:
    usage = Usage(cost=Cost(input=0.01, output=0.02, total=0.03))
    assert MaxCost(0.05)(CASE, answer(usage=usage)) is True
    assert "cost" in str(MaxCost(0.01)(CASE, answer(usage=usage)))
    assert MaxDuration(1.0)(CASE, answer(duration=0.5)) is True
    assert "took 2.000 s" in str(MaxDuration(1.0)(CASE, answer(duration=2.0)))


def test_an_evaluator_is_named_by_its_class_or_function() -> None:
    def polite(case: Case, result: RunResult) -> bool:
        return "please" in result.text

    assert evaluator_name(Contains("x")) == "Contains"
    assert evaluator_name(polite) == "polite"


def test_a_judge_answers_through_structured_output() -> None:
    verdict = tool_call("final_result", {"passed": False, "reason": "it says five"})
    with scripted_model([verdict]) as fake:
        score = Judge(fake.model, "The answer must be correct.")(CASE, answer("five"))
        prompt = fake.sent_messages()[0]
    assert score == Score(0.0, False, "it says five")
    assert isinstance(prompt, UserMessage)
    text = str(prompt.content)
    assert "The answer must be correct." in text
    assert "What is 2 + 2?" in text
    assert "five" in text
