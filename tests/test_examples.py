"""Every example runs offline and does what it says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quickstart_answers_with_the_tool_result() -> None:
    out = run_example("quickstart.py").splitlines()
    assert out[-1] == "2 + 40 = 42"
    assert "tool_execution_end" in out


def test_loop_example_answers_with_the_tool_result() -> None:
    out = run_example("loop.py").splitlines()
    assert out[-1] == "2 + 40 = 42"
    assert out[0] == "agent_start"
