"""What an eval runs: a `Case` (an input, what is expected of it) and a `Dataset` of cases."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .._core import AgentMessage, from_dict

_MISSING: Any = attrs.NOTHING


def _check_input(case: Case, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is _MISSING or value is None:
        raise TypeError("Case needs an `input` (a str or messages); none was given")


@attrs.frozen(slots=True)
class Case:
    """One input to run, and what its answer is expected to be.

    `input` is a str (the user's prompt) or messages (an `AgentMessage` or a list of them), as
    `Agent.prompt` takes. `expected` is anything an evaluator compares with (`Equals()` and
    `Contains()` use it by default); `metadata` is carried along for your own evaluators.
    A case without a `name` is named `case-<n>` (its 1-based position) by its `Dataset`.
    """

    input: str | AgentMessage | Sequence[AgentMessage] = attrs.field(validator=_check_input)
    expected: Any = None
    name: str | None = None
    metadata: Mapping[str, Any] | None = None


@attrs.frozen(slots=True, init=False)
class Dataset:
    """Cases, in order, every one of them named (unnamed ones become `case-<n>`, from 1)."""

    cases: tuple[Case, ...]

    def __init__(self, cases: Iterable[Case]) -> None:
        named = []
        for n, case in enumerate(cases, 1):
            if not isinstance(case, Case):
                raise TypeError(f"Dataset takes Case objects; item {n} is {case!r}")
            named.append(case if case.name is not None else attrs.evolve(case, name=f"case-{n}"))
        object.__setattr__(self, "cases", tuple(named))

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike[str]) -> Dataset:
        """Read a dataset from a JSON Lines file, one case a line.

        Each line is a JSON object with `input` and optionally `expected`, `name` and
        `metadata`. Blank lines are skipped; a line that is not such an object raises
        `ValueError` naming its (1-based) line number, so that a long file is fixable.
        """
        cases = []
        with Path(path).open(encoding="utf-8") as file:
            for number, line in enumerate(file, 1):
                if not line.strip():
                    continue
                try:
                    cases.append(_case_of(json.loads(line)))
                except (ValueError, TypeError) as exc:
                    raise ValueError(f"{os.fspath(path)}, line {number}: {exc}") from exc
        return cls(cases)


_KEYS = {"input", "expected", "name", "metadata"}


def _case_of(data: Any) -> Case:
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    unknown = set(data) - _KEYS
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)} (a case has {sorted(_KEYS)})")
    if "input" not in data or data["input"] is None:
        raise ValueError("the case has no `input`")
    raw = data["input"]
    if isinstance(raw, str):
        input: Any = raw
    elif isinstance(raw, list):
        input = from_dict(list[AgentMessage], raw)
    else:
        raise ValueError("`input` must be a string or a list of messages")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise ValueError("`name` must be a string")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError("`metadata` must be an object")
    return Case(input, data.get("expected"), name, metadata)
