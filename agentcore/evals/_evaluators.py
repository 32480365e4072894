"""How a run is judged: evaluators, the `RunResult` they see and the `Score` they give.

An evaluator is any callable `fn(case, result)`: the built-in ones below are attrs classes with
a `__call__`, a plain function is one too. It returns `True`/`False`, a float in [0, 1] (a pass
at 0.5 and above), a `str` (a failure, the string saying why) or a `Score`. One that raises, or
returns anything else, gives that case an error score holding the exception: the report stands.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from .._agent import Agent
from .._core import AgentMessage, AssistantMessage, ToolCall, Usage, to_dict
from ._cases import Case


@attrs.frozen(slots=True)
class RunResult:
    """What an evaluator sees of one run of a case.

    `text` is the text of the run's last assistant message, `output` its structured output
    (None unless `evaluate` was given an `output_type`), `messages` the messages the run added,
    `usage` its model calls summed (`usage.cost.total` in USD), `duration` its wall time in
    seconds (see `evaluate`), `error` the run's error text or None.
    """

    text: str = ""
    output: Any = None
    messages: Sequence[AgentMessage] = attrs.field(factory=list, repr=False)
    usage: Usage = attrs.field(factory=Usage, repr=False)
    duration: float = 0.0
    error: str | None = None


@attrs.frozen(slots=True)
class Score:
    """One evaluator's verdict on one run.

    `score` is in [0, 1] (None for an error); `passed` whether it passed; `reason` why
    (empty for a plain pass); `error` whether the evaluator itself failed (it raised, or
    returned something it may not).
    """

    score: float | None
    passed: bool
    reason: str = ""
    error: bool = False


Verdict: TypeAlias = "bool | float | str | Score"
Evaluator: TypeAlias = Callable[[Case, RunResult], Verdict]
"""How a case is scored: any callable taking the case and its run's result and returning a
`bool`, a `float` in [0, 1] (0.5 or more passes), a `str` (a failure's reason) or a `Score`;
the built-in evaluators (`Contains`, `Judge`, ...) are such callables."""


def evaluator_name(evaluator: Evaluator) -> str:
    """The name a report lists `evaluator` under: a function's `__name__`, else its class's."""
    name = getattr(evaluator, "__name__", None)
    return name if isinstance(name, str) else type(evaluator).__name__


def score_of(evaluator: Evaluator, case: Case, result: RunResult) -> Score:
    """Run `evaluator` on one result; never raises (a failure is an error score)."""
    try:
        verdict = evaluator(case, result)
    except Exception as exc:
        return Score(None, False, f"{type(exc).__name__}: {exc}", error=True)
    return _as_score(verdict)


def _as_score(verdict: Any) -> Score:
    if isinstance(verdict, Score):
        return verdict
    if isinstance(verdict, bool):
        return Score(1.0 if verdict else 0.0, verdict)
    if isinstance(verdict, (int, float)):
        value = float(verdict)
        if not 0.0 <= value <= 1.0:  # NaN fails this too
            return Score(None, False, f"score {verdict!r} is outside [0, 1]", error=True)
        return Score(value, value >= 0.5)
    if isinstance(verdict, str):
        return Score(0.0, False, verdict)
    return Score(None, False, f"an evaluator returned {type(verdict).__name__} "
                              "(expected bool, float, str or Score)", error=True)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _answer(result: RunResult) -> Any:
    return result.output if result.output is not None else result.text


@attrs.frozen(slots=True)
class Equals:
    """The run's `output` (its text when it has none) equals `value` (None: `case.expected`)."""

    value: Any = None

    def __call__(self, case: Case, result: RunResult) -> Verdict:
        expected = case.expected if self.value is None else self.value
        actual = _answer(result)
        return True if actual == expected else f"expected {_short(expected)}, got {_short(actual)}"


@attrs.frozen(slots=True)
class Contains:
    """`value` (None: `case.expected`) is in the run's `output` (its text when it has none).

    In: a substring of a str, an item of a list or a key of a dict.
    """

    value: Any = None

    def __call__(self, case: Case, result: RunResult) -> Verdict:
        expected = case.expected if self.value is None else self.value
        actual = _answer(result)
        try:
            found = expected in actual
        except TypeError:  # `1 in "abc"`, or an output that holds nothing
            found = str(expected) in str(actual)
        return True if found else f"{_short(expected)} not in {_short(actual)}"


@attrs.frozen(slots=True)
class Regex:
    """The run's text matches `pattern` somewhere (`re.search`)."""

    pattern: str

    def __call__(self, case: Case, result: RunResult) -> Verdict:
        if re.search(self.pattern, result.text):
            return True
        return f"no match for {self.pattern!r} in {_short(result.text)}"


@attrs.frozen(slots=True)
class ToolCalled:
    """The run's model called the tool `name` (with `args`: with those arguments).

    With `args`, one call must have each of those arguments with that value (other arguments
    may be there too).
    """

    name: str
    args: Mapping[str, Any] | None = None

    def __call__(self, case: Case, result: RunResult) -> Verdict:
        calls = [block for m in result.messages if isinstance(m, AssistantMessage)
                 for block in m.content if isinstance(block, ToolCall) and block.name == self.name]
        if not calls:
            return f"{self.name} was not called"
        if self.args is None:
            return True
        wanted = dict(self.args)
        if any(all(k in c.arguments and c.arguments[k] == v for k, v in wanted.items())
               for c in calls):
            return True
        return (f"{self.name} was called, never with {_short(wanted)} "
                f"(first with {_short(calls[0].arguments)})")


@attrs.frozen(slots=True)
class MaxCost:
    """The run cost at most `usd` dollars (`usage.cost.total`, the model's prices)."""

    usd: float

    def __call__(self, case: Case, result: RunResult) -> Verdict:
        cost = result.usage.cost.total
        return True if cost <= self.usd else f"cost ${cost:.6f} > ${self.usd:.6f}"


@attrs.frozen(slots=True)
class MaxDuration:
    """The run took at most `seconds` (its `duration`, see `evaluate`)."""

    seconds: float

    def __call__(self, case: Case, result: RunResult) -> Verdict:
        took = result.duration
        return True if took <= self.seconds else f"took {took:.3f} s > {self.seconds:.3f} s"


@attrs.frozen(slots=True)
class JudgeVerdict:
    """What a `Judge`'s model answers (its structured output)."""

    passed: bool
    reason: str


_JUDGE_PROMPT = """You are grading one answer of an AI assistant against a rubric.

Rubric:
{rubric}

Input given to the assistant:
{input}

Expected (may be empty):
{expected}

The assistant's answer:
{answer}

Decide whether the answer passes the rubric, and say why in one or two sentences."""


@attrs.frozen(slots=True)
class Judge:
    """An LLM judge: a model grades the answer against `rubric`, passing or failing it.

    `Agent(model)` is prompted with `rubric`, the case and the answer, and answers through
    structured output (`JudgeVerdict`: `passed` and a `reason`).

    A run of the judge that fails (the model errs, gives no valid verdict) raises, and so gives
    that case an error score naming the failure: the rest of the report stands. `model` is
    what `Agent` takes (a `Model`).
    """

    model: Any
    rubric: str

    def __call__(self, case: Case, result: RunResult) -> Verdict:
        prompt = _JUDGE_PROMPT.format(
            rubric=self.rubric, input=_as_text(case.input),
            expected="" if case.expected is None else _as_text(case.expected),
            answer=_as_text(_answer(result)))
        agent = Agent(self.model)
        try:
            run = agent.prompt(prompt, output_type=JudgeVerdict)
            run.result()
            run.raise_for_error()
            verdict = run.output
        finally:
            agent.close()
        if not isinstance(verdict, JudgeVerdict):
            raise TypeError(f"the judge answered {verdict!r}, not a verdict")
        return Score(1.0 if verdict.passed else 0.0, verdict.passed, verdict.reason)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(to_dict(value), ensure_ascii=False)
    except Exception:
        return repr(value)
