"""`python -m agentcore eval CASES.jsonl` (API §26): offline on the faux model by default,
exit 0 when every case passes, 1 when some fail, 2 on a usage error; `--json`, `--html`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _internals import cli


def cases(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_eval_passes_offline_and_writes_its_json_and_html(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = cases(tmp_path, '{"input": "What is 2 + 40?", "expected": "42", "name": "sum"}',
                 '{"input": "hello there", "expected": "hello"}', '{"input": "what time is it?"}')
    out_json, out_html = tmp_path / "r.json", tmp_path / "r.html"
    code = cli.main(["eval", path, "--repeat", "2", "--json", str(out_json),
                 "--html", str(out_html)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "Contains: 100% passed" in printed
    assert "Answered: 100% passed" in printed
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert [c["name"] for c in report["cases"]][:3] == ["sum", "case-2", "case-3"]
    assert set(report["evaluators"]) == {"Contains", "Answered"}
    assert report["evaluators"]["Contains"]["pass_rate"] == 1.0
    assert {"p50", "p95"} <= set(report["duration"])
    page = out_html.read_text(encoding="utf-8")
    assert "<svg" in page
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")


def test_eval_exits_1_when_a_case_fails(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = cases(tmp_path, '{"input": "What is 2 + 40?", "expected": "43"}')
    assert cli.main(["eval", path]) == 1
    assert "Contains: 0% passed" in capsys.readouterr().out


@pytest.mark.parametrize(("lines", "args", "error"), [
    (('{"input": 1}',), (), "line 1: `input` must be a string"),
    (('{"input": "a"}', "not json"), (), "line 2"),
    ((), ("--repeat", "0"), "must be at least 1"),
])
def test_eval_usage_errors_exit_2_naming_the_problem(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: tuple[str, ...],
        args: tuple[str, ...], error: str) -> None:
    path = cases(tmp_path, *(lines or ('{"input": "hi"}',)))
    try:
        code = cli.main(["eval", path, *args])
    except SystemExit as exit:  # argparse's own usage errors
        code = int(exit.code or 0)
    assert code == 2
    assert error in capsys.readouterr().err


def test_eval_of_a_missing_file_is_a_usage_error(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", str(tmp_path / "none.jsonl")]) == 2
    assert "No such file" in capsys.readouterr().err
