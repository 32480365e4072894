"""`examples/assistant.py`, the UX trial's small task: its unit test (as its author would write
it), its run as a script, and the bar on its length (≤ 32 lines of code)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import paths
import pytest

import agentcore as ac
from agentcore.testing import record_events, scripted_model

EXAMPLE = paths.EXAMPLES / "assistant.py"


@pytest.fixture(scope="module")
def assistant() -> ModuleType:
    spec = importlib.util.spec_from_file_location("assistant", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tools_called_and_error_reported(assistant: ModuleType) -> None:
    with scripted_model(assistant.SCRIPT) as fake:
        agent = assistant.make_agent(fake.model)
        events = record_events(agent.prompt("Weather in Paris and ACME?"), timeout=5)
    ends = events.of(ac.ToolExecutionEndEvent)
    assert {e.tool_name: e.is_error for e in ends} == {"get_weather": False,
                                                       "get_stock_price": True}
    assert fake.call(1).tool_results[0].text == "Paris: 18°C, sunny"
    assert fake.call(1).tool_results[1].text == (
        "RuntimeError: market data service is down for ACME")


@pytest.mark.slow
def test_the_script_streams_both_answers_and_restores_the_conversation(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                          timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [  # one line per prompt: its run's text, all turns
        "Paris is 18°C and sunny; I couldn't get the ACME price (the service is down).",
        "You asked about Paris.",
        "7 messages restored",
    ]
    saved = ac.from_json(list[ac.AgentMessage], (tmp_path / "conversation.json").read_text())
    assert [m.role for m in saved] == ["user", "assistant", "toolResult", "toolResult",
                                       "assistant", "user", "assistant"]


def test_the_task_takes_at_most_32_lines_of_code() -> None:
    source = EXAMPLE.read_text(encoding="utf-8")
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef)) and ast.get_docstring(node):
            first = node.body[0]
            docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    code = [line for number, line in enumerate(source.splitlines(), 1)
            if line.strip() and not line.strip().startswith("#") and number not in docstrings]
    assert len(code) <= 32
