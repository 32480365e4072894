"""One `mypy --strict` run over the package and `tests/typing/`, its messages by file.

The conftest's session fixture `mypy_report` runs it once for every test that asks:
`tests/package/test_public_api.py` (the package is clean), `tests/core/test_options.py` and
`tests/package/test_errors_ux.py` (their snippets in `tests/typing/`: each `*_pass.py` must
type-check, each `*_fail.py` must fail with the error its test names). One run instead of
one per test: the snippets import the package, so checking one checks most of it again.

Incremental, as mypy is by default (its cache in `.mypy_cache/`): the first run takes ~5 s
on a 2-core machine, a later one a fraction of a second. The snippets are top-level modules
(there is no `__init__.py` above them), so `[tool.mypy]`'s relaxed override for `tests.*`
does not apply: they are checked as strictly as the package.

Under pytest-xdist each worker has its own session: the first worker that needs the report
runs mypy, the others wait for it and read what it saved (`run_mypy_once`).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import paths

try:
    import fcntl
except ImportError:  # Windows: each xdist worker runs mypy itself
    fcntl = None  # type: ignore[assignment]

_LOCATION = re.compile(r"^(?P<path>[^:]+\.pyi?):(?P<rest>\d+(:\d+)?: (error|note): .*)$")


@dataclass
class MypyReport:
    """What mypy said. Paths are relative to the repository, with `/`:
    `agentcore/_core/_types.py`, `tests/typing/options_flat_keywords_fail.py`."""

    returncode: int  # 0: no error, 1: errors, 2: mypy itself failed
    output: str
    by_file: dict[str, list[str]] = field(default_factory=dict)  # "12: error: ..." lines
    other: list[str] = field(default_factory=list)  # the summary line, anything unattributed

    def errors(self, path: str) -> list[str]:
        """The error messages for `path`, without their line numbers and error codes."""
        return [re.sub(r"^\d+(:\d+)?: error: |  \[[a-z-]+\]$", "", line)
                for line in self.by_file.get(path, []) if ": error: " in line]


def run_mypy() -> MypyReport:
    """Run mypy --strict (with the repository's `[tool.mypy]`) and sort its lines by file."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file",
         str(paths.ROOT / "pyproject.toml"), "agentcore", "tests/typing"],
        capture_output=True, text=True, cwd=paths.ROOT, timeout=280, check=False,
    )
    report = MypyReport(done.returncode, done.stdout + done.stderr)
    for line in report.output.splitlines():
        match = _LOCATION.match(line)
        if match:
            path = match["path"].replace("\\", "/")
            report.by_file.setdefault(path, []).append(match["rest"])
        elif line.strip():
            report.other.append(line)
    return report


def run_mypy_once(shared: Path | None) -> MypyReport:
    """`run_mypy()`; with `shared` (a directory that every xdist worker of this run shares),
    only in the first worker that asks: the others read its report from there."""
    if shared is None or fcntl is None:
        return run_mypy()
    with open(shared / "mypy.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        saved = shared / "mypy.json"
        if saved.exists():
            return MypyReport(**json.loads(saved.read_text()))
        report = run_mypy()
        saved.write_text(json.dumps(dataclasses.asdict(report)))
        return report
