"""The fast tier (`pytest -m "not slow"`): a test that starts a process must be marked `slow`.

The `slow_tier` plugin (`tests/slow_tier.py`) checks every test of every run; here it runs on
a small suite of its own, in a pytest subprocess (so this test is slow itself).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import paths
import pytest

pytestmark = pytest.mark.slow

SUITE = '''
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def child():
    with subprocess.Popen([sys.executable, "-c", "input()"], stdin=subprocess.PIPE) as process:
        yield process
        process.communicate(b"\\n")


def test_unmarked_runs_a_subprocess():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.slow
def test_marked_runs_a_subprocess():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_unmarked_module_fixture_starts_a_process(child):
    assert child.poll() is None


def test_unmarked_starts_nothing():
    pass
'''


def _pytest(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest with only the `slow_tier` plugin over the suite in `directory`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(paths.TESTS), str(paths.ROOT)])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "slow_tier", "-p", "no:cacheprovider", "-q",
         "-rA", "-o", "markers=slow", "--rootdir", str(directory), *args, str(directory)],
        capture_output=True, text=True, cwd=directory, env=env, timeout=120, check=False,
    )


def test_slow_tier_an_unmarked_test_that_starts_a_process_fails(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    done = _pytest(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    summary = {line.split(" - ")[0] for line in done.stdout.splitlines()
               if line.startswith(("PASSED ", "ERROR ", "FAILED "))}
    assert summary == {
        "ERROR test_suite.py::test_unmarked_runs_a_subprocess",
        "PASSED test_suite.py::test_unmarked_runs_a_subprocess",
        "PASSED test_suite.py::test_marked_runs_a_subprocess",
        "ERROR test_suite.py::test_unmarked_module_fixture_starts_a_process",
        "PASSED test_suite.py::test_unmarked_module_fixture_starts_a_process",
        "PASSED test_suite.py::test_unmarked_starts_nothing",
    }, done.stdout
    assert "this test starts a process (subprocess.Popen" in done.stdout
    assert "mark it @pytest.mark.slow" in done.stdout


def test_slow_tier_not_slow_leaves_the_marked_tests_out(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    done = _pytest(tmp_path, "-m", "not slow", "-k", "not unmarked_runs")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith(
        "2 passed, 2 deselected, 1 error"), done.stdout
