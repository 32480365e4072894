"""`evaluate` and its `Report` on a scripted model, offline (API §26).

The scripted model answers from the prompt (`answer_of`), so runs may go at once in any order.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcore import Agent, UserMessage
from agentcore.evals import (
    Case,
    Contains,
    Dataset,
    Equals,
    Judge,
    MaxDuration,
    Regression,
    Report,
    RunResult,
    ToolCalled,
    evaluate,
)
from agentcore.testing import ScriptedModel, scripted_model, tool_call

ANSWERS = {"capital of France?": "Paris", "2 + 2?": "4", "colour of the sky?": "green"}


def prompt_text(context: Any) -> str:
    user = [m for m in context.messages if isinstance(m, UserMessage)][-1]
    content = user.content
    return content if isinstance(content, str) else "".join(b.text for b in content)


def answer_of(context: Any, options: Any, model: Any) -> str:
    return ANSWERS.get(prompt_text(context), "no idea")


@pytest.fixture
def fake() -> Iterator[ScriptedModel]:
    with scripted_model([answer_of] * 100) as model:
        yield model


def dataset() -> Dataset:
    return Dataset([Case("capital of France?", "Paris", name="france"),
                    Case("2 + 2?", "4"), Case("colour of the sky?", "blue", name="sky")])


def test_evaluate_scores_every_case_with_every_evaluator(fake: ScriptedModel) -> None:
    def short(case: Case, result: RunResult) -> float:
        return 1.0 if len(result.text) < 3 else 0.25

    report = evaluate(lambda: Agent(fake.model), dataset(), [Equals(), short, MaxDuration(30)],
                      progress=False)
    assert report.evaluators == ["Equals", "short", "MaxDuration"]
    assert [row.case.name for row in report.rows] == ["france", "case-2", "sky"]
    sky = report.rows[2]
    assert sky.result.text == "green"
    assert sky.scores["Equals"].passed is False
    assert sky.scores["Equals"].reason == "expected 'blue', got 'green'"
    assert report.rows[0].scores["short"].score == 0.25
    assert report.rows[0].scores["short"].passed is False
    assert report.pass_rate("Equals") == pytest.approx(2 / 3)
    assert report.pass_rate("MaxDuration") == 1.0
    assert all(row.result.duration >= 0 for row in report.rows)
    assert report.passed is False


def test_a_raising_or_misbehaving_evaluator_gives_an_error_score(fake: ScriptedModel) -> None:
    def broken(case: Case, result: RunResult) -> bool:
        raise KeyError("nope")

    def too_high(case: Case, result: RunResult) -> float:
        return 3.0

    report = evaluate(lambda: Agent(fake.model), dataset(), [broken, too_high, Equals()],
                      progress=False)
    for row in report.rows:
        assert row.scores["broken"].error
        assert row.scores["broken"].score is None
        assert row.scores["broken"].reason == "KeyError: 'nope'"
        assert row.scores["too_high"].error
    assert report.pass_rate("Equals") == pytest.approx(2 / 3)  # the report stands


def test_a_failing_judge_gives_an_error_score_and_the_report_stands(
        fake: ScriptedModel) -> None:
    with scripted_model([tool_call("final_result", {"passed": True, "reason": "right"})]) as jm:
        # one verdict queued: the second and third judge calls fail ("No more faux responses")
        report = evaluate(lambda: Agent(fake.model), dataset(),
                          [Judge(jm.model, "Correct?"), Contains()], progress=False,
                          max_concurrency=1)
    judged = [row.scores["Judge"] for row in report.rows]
    assert sum(s.passed for s in judged) == 1
    errors = [s for s in judged if s.error]
    assert len(errors) == 2
    assert all("No more faux responses" in s.reason for s in errors)
    assert report.pass_rate("Contains") == pytest.approx(2 / 3)


def test_a_failed_run_is_scored_with_its_error(fake: ScriptedModel) -> None:
    def boom() -> Agent:
        raise RuntimeError("no agent today")

    report = evaluate(boom, [Case("x")], [lambda case, result: result.error is None],
                      progress=False)
    row = report.rows[0]
    assert row.result.error == "RuntimeError: no agent today"
    assert row.scores["<lambda>"].passed is False
    assert row.result.duration == 0.0


def test_tool_called_sees_the_runs_calls() -> None:
    from agentcore import tool

    @tool(description="Look up a city.")
    def lookup(city: str) -> str:
        return "sunny"

    with scripted_model([tool_call("lookup", {"city": "Oslo"}), "Sunny in Oslo."]) as fake:
        report = evaluate(lambda: Agent(fake.model, tools=[lookup]), [Case("Weather?")],
                          [ToolCalled("lookup", {"city": "Oslo"}), ToolCalled("lookup",
                           {"city": "Rome"}), Contains("Sunny")], progress=False)
    scores = report.rows[0].scores
    assert scores["ToolCalled"].passed
    assert not scores["ToolCalled-2"].passed
    assert scores["Contains"].passed


def test_repeat_runs_each_case_n_times_and_reports_the_spread() -> None:
    answers = iter(["4", "4", "5", "4"])  # round 1: both right, round 2: one wrong

    def next_answer(context: Any, options: Any, model: Any) -> str:
        return next(answers)

    with scripted_model([next_answer] * 4) as fake:
        report = evaluate(lambda: Agent(fake.model), [Case("a", "4"), Case("b", "4")],
                          [Equals()], repeat=2, max_concurrency=1, progress=False)
    assert [(row.case.name, row.repeat) for row in report.rows] == [
        ("case-1", 0), ("case-2", 0), ("case-1", 1), ("case-2", 1)]
    assert report.pass_rate("Equals") == 0.75
    assert report.spread("Equals") == 0.5
    data = json.loads(report.to_json())
    assert data["evaluators"]["Equals"] == {"pass_rate": 0.75, "spread": 0.5}
    assert "(spread 50%)" in report.to_text()


def test_a_store_makes_evaluate_resumable(tmp_path: Path, fake: ScriptedModel) -> None:
    store = tmp_path / "eval.sqlite"
    first = evaluate(lambda: Agent(fake.model), dataset(), [Equals()], store=store,
                     progress=False)
    calls = len(fake.calls)
    again = evaluate(lambda: Agent(fake.model), dataset(), [Equals()], store=store,
                     progress=False)
    assert len(fake.calls) == calls  # nothing ran again
    assert [r.result.text for r in again.rows] == [r.result.text for r in first.rows]
    assert all(r.result.duration >= 0 for r in again.rows)


def test_to_json_has_the_shape_of_the_contract(fake: ScriptedModel) -> None:
    report = evaluate(lambda: Agent(fake.model), dataset(), [Equals(), Contains("a")],
                      progress=False)
    data = json.loads(report.to_json())
    assert set(data) >= {"cases", "evaluators", "cost", "duration"}
    assert set(data["duration"]) >= {"p50", "p95"}
    assert len(data["cases"]) == 3
    for case in data["cases"]:
        assert set(case) >= {"name", "input", "scores", "cost", "duration"}
        assert set(case["scores"]) == {"Equals", "Contains"}
        for score in case["scores"].values():
            assert set(score) >= {"score", "passed", "reason"}
    assert data["cases"][0]["name"] == "france"
    assert data["cases"][0]["input"] == "capital of France?"
    assert data["cases"][2]["scores"]["Equals"] == {
        "score": 0.0, "passed": False, "reason": "expected 'blue', got 'green'", "error": False}
    assert set(data["evaluators"]["Equals"]) >= {"pass_rate", "spread"}
    assert isinstance(data["cost"], float)


def test_print_writes_a_table(fake: ScriptedModel, capsys: pytest.CaptureFixture[str]) -> None:
    report = evaluate(lambda: Agent(fake.model), dataset(), [Equals()], progress=False)
    buffer = io.StringIO()
    report.print(file=buffer)
    text = buffer.getvalue()
    assert text.splitlines()[0].split() == ["case", "Equals", "cost", "$", "seconds"]
    assert re.search(r"^sky\s+FAIL", text, re.M)
    assert "sky / Equals: expected 'blue', got 'green'" in text
    assert "Equals: 67% passed" in text
    report.print()
    assert capsys.readouterr().out == text


def test_to_html_is_one_self_contained_page(tmp_path: Path, fake: ScriptedModel) -> None:
    cases = [*dataset(), Case("<script>alert(1)</script>", name="<b>evil</b>")]
    report = evaluate(lambda: Agent(fake.model), cases, [Equals(), Contains("i")],
                      progress=False)
    path = tmp_path / "report.html"
    report.to_html(path)
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<svg" in page
    assert "<table>" in page
    assert "<script" not in page
    assert "<b>evil" not in page
    assert "&lt;b&gt;evil" in page
    # nothing fetched: no URL at all (inline SVG in HTML needs no namespace)
    assert "http" not in page
    assert not re.search(r"(src|href)=", page)
    assert "sky" in page
    assert "expected &#x27;blue&#x27;, got &#x27;green&#x27;" in page


def test_compare_lists_the_cases_that_got_worse() -> None:
    def run(answers: dict[str, str]) -> Report:
        def reply(context: Any, options: Any, model: Any) -> str:
            return answers[prompt_text(context)]

        with scripted_model([reply] * 3) as fake:
            return evaluate(lambda: Agent(fake.model), dataset(), [Equals()],
                            max_concurrency=1, progress=False)

    baseline = run({"capital of France?": "Paris", "2 + 2?": "4", "colour of the sky?": "x"})
    current = run({"capital of France?": "Lyon", "2 + 2?": "4", "colour of the sky?": "blue"})
    worse = current.compare(baseline)
    assert worse == [Regression("france", "Equals", 1.0, 0.0, 1.0, 0.0)]
    assert str(worse[0]) == "france / Equals: score 1.00 -> 0.00, passed 100% -> 0%"
    assert baseline.compare(baseline) == []


def test_repeat_must_be_positive(fake: ScriptedModel) -> None:
    with pytest.raises(ValueError, match="repeat"):
        evaluate(lambda: Agent(fake.model), dataset(), [Equals()], repeat=0)


def test_a_report_read_back_from_json_compares_like_the_original(fake: ScriptedModel) -> None:
    cases = [*dataset(), Case([UserMessage("2 + 2?")], "4", name="as-messages")]
    report = evaluate(lambda: Agent(fake.model), cases, [Equals()], progress=False)
    data = json.loads(report.to_json())
    assert data["cases"][3]["input"][0]["role"] == "user"
    back = Report.from_json(report.to_json())
    assert back.to_dict() == report.to_dict()
    assert back.compare(report) == []
    assert report.compare(back) == []
