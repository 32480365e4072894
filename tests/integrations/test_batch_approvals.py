"""`run_batch` runs that stop for approval of a tool call, and `resume_batch` (API §16, §20).

The agents (`tests/batch_agents.py`) are offline: a faux model of their own asks
`delete <path>` prompts for a `delete_file` call, which needs approval and deletes a real
file, so a call that ran (or ran twice: the second fails) shows on disk; anything else is
answered `echo: <text>`.
"""

from __future__ import annotations

import json
import os
import pickle
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import attrs
import pytest
from _internals import find_pause, from_wire, pause_of, to_wire
from batch_agents import City, make_file_agent

import agentcore as ac
from agentcore.batch import BatchResult, resume_batch, run_batch


def files(tmp_path: Path, *names: str) -> list[str]:
    """Make a file for each of `names` in `tmp_path`; return their `delete <path>` prompts."""
    prompts = []
    for name in names:
        (tmp_path / name).write_text("x")
        prompts.append(f"delete {tmp_path / name}")
    return prompts


def by_index(results: Any) -> dict[int, BatchResult]:
    """Results by input index, checking that each index came once."""
    listed = list(results)
    got = {r.index: r for r in listed}
    assert len(got) == len(listed)
    return got


class Counted:
    """`make_file_agent`, counting the agents it made (on threads of this process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.made = 0

    def __call__(self) -> ac.Agent:
        with self.lock:
            self.made += 1
        return make_file_agent()


def decide_all(results: dict[int, BatchResult], decision: Callable[[BatchResult], bool | str]
               ) -> list[tuple[BatchResult, dict[str, bool | str]]]:
    return [(r, {c.id: decision(r) for c in r.pending_approvals})
            for r in results.values() if r.pending_approvals]


def test_run_batch_a_run_stopping_for_approval_is_a_result_listing_its_calls(
        tmp_path: Path) -> None:
    prompts = files(tmp_path, "a.txt", "b.txt")
    seen: list[BatchResult] = []

    results = by_index(run_batch(make_file_agent, [prompts[0], "hello", prompts[1]],
                                 progress=lambda done, total, r: seen.append(r)))

    for index, name in ((0, "a.txt"), (2, "b.txt")):
        result = results[index]
        assert (result.error, result.ok, result.text, result.output) == (None, True, "", None)
        [call] = result.pending_approvals
        assert (call.id, call.name, call.arguments) == (
            f"call_{name}", "delete_file", {"path": str(tmp_path / name)})
        assert [m.role for m in result.messages] == ["user", "assistant"]
        assert result.messages[-1].tool_calls == [call]
    assert (results[1].text, results[1].pending_approvals) == ("echo: hello", [])
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"]  # nothing ran
    assert len(seen) == 3
    assert all(r.error is None for r in seen)
    copy = pickle.loads(pickle.dumps(results[0]))  # results stay picklable
    assert copy.pending_approvals == results[0].pending_approvals


def test_run_batch_with_output_type_a_waiting_run_is_not_a_failure(tmp_path: Path) -> None:
    [prompt] = files(tmp_path, "a.txt")

    results = by_index(run_batch(make_file_agent, [prompt, "Rome"], output_type=City))

    assert (results[0].error, results[0].output) == (None, None)  # no answer yet: no error
    assert [c.name for c in results[0].pending_approvals] == ["delete_file"]
    assert (results[1].error, results[1].output) == (None, City("Rome", 4))

    [resumed] = resume_batch(make_file_agent, decide_all(results, lambda r: True),
                             output_type=City)

    text = f"deleted a.txt (pid {os.getpid()})"
    assert (resumed.error, resumed.output) == (None, City(text, len(text)))
    assert not (tmp_path / "a.txt").exists()


def test_resume_batch_runs_approved_calls_once_and_denies_the_others(tmp_path: Path) -> None:
    prompts = files(tmp_path, "a.txt", "b.txt", "c.txt")
    first = by_index(run_batch(make_file_agent, [*prompts, "hello"]))
    make = Counted()

    decisions = [(first[0], {"call_a.txt": True}), (first[1], {"call_b.txt": False}),
                 (first[2], {"call_c.txt": "keep c"})]
    resumed = by_index(resume_batch(make, decisions))

    assert sorted(resumed) == [0, 1, 2]
    assert make.made == 3
    assert sorted(os.listdir(tmp_path)) == ["b.txt", "c.txt"]
    assert resumed[0].text == f"done: deleted a.txt (pid {os.getpid()})"
    assert resumed[1].text == "done: denied: the user did not allow this call"
    assert resumed[2].text == "done: denied: keep c"
    for index, result in resumed.items():
        assert (result.input, result.error, result.pending_approvals) == (
            first[index].input, None, [])
        assert result.messages[:2] == first[index].messages  # the whole run, both parts
        assert [m.role for m in result.messages] == [
            "user", "assistant", "toolApproval", "toolResult", "assistant"]
        [answer] = [m for m in result.messages if isinstance(m, ac.ToolResultMessage)]
        assert answer.is_error is (index != 0)
        assert result.usage.total_tokens > first[index].usage.total_tokens > 0
    approval = resumed[0].messages[2]
    assert isinstance(approval, ac.ToolApprovalMessage)
    assert (approval.approved, approval.denied) == (["call_a.txt"], {})


def test_resume_batch_with_a_store_answers_later_and_never_runs_a_call_twice(
        tmp_path: Path) -> None:
    store = tmp_path / "batch.sqlite"
    work = tmp_path / "files"
    work.mkdir()
    prompts = [*files(work, "a.txt", "b.txt"), "hello"]
    list(run_batch(make_file_agent, prompts, store=store))

    # later (a new process, say): the store gives the waiting results back without running
    make = Counted()
    again = by_index(run_batch(make, prompts, store=store))
    assert make.made == 0
    assert [c.id for c in again[0].pending_approvals] == ["call_a.txt"]
    assert [c.id for c in again[1].pending_approvals] == ["call_b.txt"]
    assert again[2].text == "echo: hello"

    resumed = by_index(resume_batch(make, [(again[0], {"call_a.txt": True})], store=store))
    assert make.made == 1
    assert resumed[0].text.startswith("done: deleted a.txt")
    assert os.listdir(work) == ["b.txt"]

    # resuming the same waiting result again: the store says it went on, nothing runs
    twice = by_index(resume_batch(make, [(again[0], {"call_a.txt": True})], store=store))
    assert make.made == 1
    assert twice[0].text == resumed[0].text
    final = by_index(run_batch(make, prompts, store=store))
    assert make.made == 1
    assert (final[0].text, final[0].pending_approvals) == (resumed[0].text, [])
    assert [c.id for c in final[1].pending_approvals] == ["call_b.txt"]  # still waiting


def test_resume_batch_that_fails_to_start_keeps_the_calls_pending(tmp_path: Path) -> None:
    [prompt] = files(tmp_path, "a.txt")
    [waiting] = run_batch(make_file_agent, [prompt])

    def broken() -> ac.Agent:
        raise RuntimeError("no agent today")

    [failed] = resume_batch(broken, [(waiting, {"call_a.txt": True})])

    assert failed.error == "RuntimeError: no agent today"
    assert failed.pending_approvals == waiting.pending_approvals  # can be retried
    assert failed.messages == waiting.messages
    [retried] = resume_batch(make_file_agent, [(failed, {"call_a.txt": True})])
    assert retried.text.startswith("done: deleted a.txt")
    assert not (tmp_path / "a.txt").exists()


def test_resume_batch_with_bad_decisions_raises_at_the_call_naming_them(
        tmp_path: Path) -> None:
    [prompt] = files(tmp_path, "a.txt")
    results = by_index(run_batch(make_file_agent, [prompt, "hello"]))
    waiting, done = results[0], results[1]

    cases: list[tuple[Any, type[Exception], str]] = [
        ("nope", TypeError, r"^'decisions' must be an iterable"),
        ({waiting.index: {}}, TypeError, r"^'decisions' must be an iterable"),
        ([waiting], TypeError, r"^'decisions\[0\]' must be a \(BatchResult, approvals\) pair"),
        ([(done, {})], ValueError, r"^'decisions\[0\]': the result of input 1 waits for no"),
        ([(waiting, {})], ValueError, r"^'decisions\[0\]' \(input 0\): .*missing: call_a"),
        ([(waiting, {"call_x": True})], ValueError,
         r"^'decisions\[0\]' \(input 0\): .*'call_x' does not wait"),
        ([(waiting, {"call_a.txt": 1})], TypeError, r"^'decisions\[0\]' \(input 0\): "),
        ([(waiting, ["call_a.txt"])], TypeError, r"^'decisions\[0\]' \(input 0\): "),
        ([(waiting, {"call_a.txt": True})] * 2, ValueError,
         r"^'decisions\[1\]': input 0 is resumed twice"),
    ]
    for decisions, error, match in cases:
        with pytest.raises(error, match=match):
            resume_batch(make_file_agent, decisions)
    with pytest.raises(ValueError, match=r"^'max_concurrency'"):
        resume_batch(make_file_agent, [(waiting, {"call_a.txt": True})], max_concurrency=0)
    assert (tmp_path / "a.txt").exists()  # nothing ran


def test_batch_result_pause_is_what_find_pause_finds_in_its_transcript(tmp_path: Path) -> None:
    prompts = files(tmp_path, "a.txt", "b.txt")
    first = by_index(run_batch(make_file_agent, [*prompts, "hello"]))
    tools = make_file_agent().tools

    for result in first.values():
        pause = find_pause(result.messages, tools)
        assert pause_of(result) == pause
        assert result.pending_approvals == ([] if pause is None else pause.calls)
    assert pause_of(first[0]) is not None
    assert pause_of(first[2]) is None

    resumed = by_index(resume_batch(make_file_agent, [(first[0], {"call_a.txt": True}),
                                                      (first[1], {"call_b.txt": False})]))
    for result in resumed.values():
        assert pause_of(result) is find_pause(result.messages, tools) is None
        assert result.pending_approvals == []


def test_batch_result_round_trips_and_pending_calls_come_from_the_transcript(
        tmp_path: Path) -> None:
    [prompt] = files(tmp_path, "a.txt")
    results = by_index(run_batch(make_file_agent, [prompt, "hello"]))
    waiting, done = results[0], results[1]
    for result in (waiting, done):
        data = json.loads(json.dumps(to_wire(result)))  # as the store keeps it
        assert from_wire(data, result.input, None) == result
    assert [c.id for c in waiting.pending_approvals] == ["call_a.txt"]

    # A stored list is read for its ids only; the calls are the transcript's
    data = to_wire(waiting)
    [call] = data["pending_approvals"]
    data["pending_approvals"] = [{**call, "arguments": {"path": "elsewhere"}},
                                 {**call, "id": "call_gone"}]
    assert from_wire(data, waiting.input, None) == waiting
    # An old row that lists calls its transcript has answered since: none waits
    moved_on = {**to_wire(done), "pending_approvals": [call]}
    assert from_wire(moved_on, done.input, None).pending_approvals == []


def test_batch_result_pending_approvals_must_be_the_transcripts_waiting_calls(
        tmp_path: Path) -> None:
    [prompt] = files(tmp_path, "a.txt")
    [waiting] = run_batch(make_file_agent, [prompt])
    [call] = waiting.pending_approvals
    other = attrs.evolve(call, id="call_other")

    with pytest.raises(ValueError, match=r"^'pending_approvals' must be the calls of the last "
                                         r"assistant message .*got \['call_other'\]"):
        attrs.evolve(waiting, pending_approvals=[other])
    with pytest.raises(ValueError, match="'pending_approvals' must be"):
        BatchResult(0, prompt, pending_approvals=[call])  # no transcript: nothing waits
    with pytest.raises(TypeError, match="'pending_approvals' must be a list of ToolCall"):
        attrs.evolve(waiting, pending_approvals=[call.id])
    assert attrs.evolve(waiting, pending_approvals=[]).pending_approvals == []  # ran with approve


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_run_batch_and_resume_batch_on_a_dask_cluster(dask_client: Any,
                                                       tmp_path: Path) -> None:
    executor: Executor = dask_client.get_executor()
    prompts = [*files(tmp_path, "a.txt", "b.txt"), "hello"]

    first = by_index(run_batch(make_file_agent, prompts, executor=executor))
    assert [c.id for c in first[0].pending_approvals] == ["call_a.txt"]
    assert [c.id for c in first[1].pending_approvals] == ["call_b.txt"]
    assert (first[2].text, first[2].pending_approvals) == ("echo: hello", [])
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"]

    resumed = by_index(resume_batch(
        make_file_agent, [(first[0], {"call_a.txt": True}), (first[1], {"call_b.txt": "no"})],
        executor=executor))

    assert os.listdir(tmp_path) == ["b.txt"]
    text, pid = resumed[0].text.removesuffix(")").split(" (pid ")
    assert text == "done: deleted a.txt"
    assert int(pid) != os.getpid()
    assert resumed[1].text == "done: denied: no"
    for index in (0, 1):
        assert resumed[index].error is None
        assert resumed[index].pending_approvals == []
        assert [m.role for m in resumed[index].messages] == [
            "user", "assistant", "toolApproval", "toolResult", "assistant"]
