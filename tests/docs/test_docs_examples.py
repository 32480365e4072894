"""Every ```python block of every page under `docs/` runs, so the docs cannot drift from the code.

One test per page (its id is the page's path, `docs/guides/tools.md`). The conventions, for
whoever writes a page:

- **A page is a script.** Its ```python blocks run in order, in one fresh namespace: a module
  named `__main__`, as `python page.py` would run it (so `if __name__ == "__main__":` blocks
  run too), and a later block uses what an earlier one defined. Blocks in other languages
  (```bash, ```text, ```json, ...) are not run; fences indented in an admonition or a tab are
  found too.
- **Offline.** Looking up any host name but `localhost`, or connecting anywhere but this
  machine, fails the page (even when the page's code swallows the error, as a run that turns a
  failed request into an error reply would). Examples use `agentcore.testing.scripted_model`,
  the faux provider, `MockTransport`, or a server the page starts on 127.0.0.1.
- **In a temporary directory.** The working directory is a fresh temporary one: files a page
  writes (`chat.db`, `cases.jsonl`) land there and go with it.
- **`# docs: no-run`.** A block whose first line starts with this comment is compiled (a syntax
  error fails the page) but not run: for code that needs an API key, the network, a person, or
  the name of something the reader has and the page does not. Say why after it:
  `# docs: no-run (needs OPENAI_API_KEY)`.
- **Clean up.** A page must not leave a thread running (the conftest fails any test that
  does): close agents (`with ac.Agent(...) as agent:`, or `agent.close()`), leave a
  `scripted_model` block only after the runs that use it, close servers and sessions. Undo what
  a page sets up for the whole process (`uninstrument()` after `instrument()`); providers it
  registers are unregistered after it in any case.
- **Processes.** A page that starts a process (a subprocess, an MCP server over stdio, a
  process pool, a Dask cluster) has a line `<!-- docs: slow -->` (a reason may follow `slow`):
  its test is then marked `slow`, and left out of `pytest -m "not slow"`. A page that starts
  one without the line fails, saying so.

A failure names the page and the line where the failing block starts; the traceback shows the
page's own lines (the block is compiled under the page's path, at its lines).
"""

from __future__ import annotations

import ipaddress
import re
import sys
import traceback
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import paths
import pytest
from slow_tier import PROCESS_EVENTS

from agentcore.providers import get_apis, speaks_http, unregister_provider

NO_RUN = "# docs: no-run"
SLOW_PAGE = re.compile(r"^<!--\s*docs:\s*slow\b.*-->\s*$", re.M)
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")
PYTHON = {"python", "py", "python3"}
LOCAL_NAMES = {None, "", "localhost", b"localhost"}


class Block(NamedTuple):
    """One ```python block: its code and the page line its code starts on (1-based)."""

    line: int
    source: str

    @property
    def runs(self) -> bool:
        first = next((line.strip() for line in self.source.splitlines() if line.strip()), "")
        return not first.startswith(NO_RUN)


def python_blocks(text: str) -> list[Block]:
    """The ```python fenced blocks of a Markdown page, in order, dedented to their fence."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening["fence"], opening["indent"]
        language = re.split(r"[\s{}.]+", opening["info"].strip(" {."), maxsplit=1)[0].lower()
        body, j = [], i + 1
        while j < len(lines):
            closing = FENCE.match(lines[j])
            if (closing is not None and not closing["info"] and closing["fence"][0] == fence[0]
                    and len(closing["fence"]) >= len(fence)):
                break
            body.append(lines[j].removeprefix(indent))
            j += 1
        if language in PYTHON:
            blocks.append(Block(i + 2, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


# --- offline, and no process unannounced: one audit hook for the whole session ----------------

_watch: dict[str, Any] = {"on": False, "slow": False, "blocked": [], "processes": []}


def _is_local(host: Any) -> bool:
    if host in LOCAL_NAMES:
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    try:
        address = ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified  # 0.0.0.0 is this machine too


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Refuse a look-up or connection beyond this machine while a page runs; note processes."""
    if not _watch["on"]:
        return
    if event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"):
        host = args[0]
    elif event == "socket.connect" and isinstance(args[1], tuple):
        host = args[1][0]
    else:
        if event in PROCESS_EVENTS and not _watch["slow"]:
            _watch["processes"].append(f"{event} {str(args[:2])[:200]}")
        return
    if not _is_local(host):
        _watch["blocked"].append(f"{event} {host!r}")
        raise ConnectionRefusedError(f"docs examples run offline: {event} {host!r} refused")


sys.addaudithook(_audit)


@contextmanager
def watched(slow: bool) -> Iterator[dict[str, Any]]:
    """While a page runs: no look-up or connection beyond this machine; processes noted."""
    _watch.update(on=True, slow=slow, blocked=[], processes=[])
    try:
        yield _watch
    finally:
        _watch["on"] = False


def _custom_apis() -> set[str]:
    return {api for api in get_apis() if not speaks_http(api)}


# --- the test ----------------------------------------------------------------------------------


def _pages() -> list[Any]:
    params = []
    for page in sorted(paths.DOCS.rglob("*.md")):
        slow = SLOW_PAGE.search(page.read_text()) is not None
        params.append(pytest.param(page, id=page.relative_to(paths.ROOT).as_posix(),
                                   marks=[pytest.mark.slow] if slow else []))
    return params


def _page_traceback(exc: BaseException, page: Path) -> str:
    """The exception as the page's author needs it: from the page's first frame on."""
    if isinstance(exc, SyntaxError):
        return "".join(traceback.format_exception_only(type(exc), exc))
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != str(page):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


@pytest.mark.parametrize("page", _pages())
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           request: pytest.FixtureRequest) -> None:
    name = page.relative_to(paths.ROOT).as_posix()
    blocks = python_blocks(page.read_text())
    script = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", script)
    monkeypatch.setattr(sys, "argv", [str(page)])
    monkeypatch.chdir(tmp_path)
    custom_before = _custom_apis()
    slow = request.node.get_closest_marker("slow") is not None
    failure = None
    try:
        with watched(slow) as watch:
            for block in blocks:
                try:
                    code = compile("\n" * (block.line - 1) + block.source, str(page), "exec")
                    if block.runs:
                        exec(code, script.__dict__)
                except (Exception, SystemExit) as exc:
                    failure = (f"{name}: the python block at line {block.line} failed:\n\n"
                               f"{_page_traceback(exc, page)}")
                    break
    finally:
        for api in _custom_apis() - custom_before:
            unregister_provider(api)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    blocked = sorted(set(watch["blocked"]))
    assert blocked == [], f"{name} reached beyond this machine: {blocked}"
    assert watch["processes"] == [], (
        f"{name} starts a process ({watch['processes'][0]}): add a line `<!-- docs: slow -->` "
        "to the page, so that its test is marked slow")


# --- the block finder ----------------------------------------------------------------------------


def test_python_blocks_finds_fenced_python_in_order_with_its_lines() -> None:
    page = "\n".join([
        "# Title",                    # 1
        "```python",                  # 2
        "a = 1",                      # 3
        "```",                        # 4
        "```bash",                    # 5
        "echo no",                    # 6
        "```",                        # 7
        "!!! note",                   # 8
        "    ```py title=\"b.py\"",   # 9
        "    b = a + 1",              # 10
        "    if b:",                  # 11
        "        print(b)",           # 12
        "    ```",                    # 13
        "~~~~python",                 # 14
        "c = '```'",                  # 15
        "```",                        # 16
        "~~~~",                       # 17
    ])
    assert python_blocks(page) == [
        Block(3, "a = 1\n"),
        Block(10, "b = a + 1\nif b:\n    print(b)\n"),
        Block(15, "c = '```'\n```\n"),
    ]


def test_python_blocks_skips_python_inside_another_fence() -> None:
    page = "````markdown\n```python\nnot_run()\n```\n````\n```python\nrun()\n```\n"
    assert python_blocks(page) == [Block(7, "run()\n")]


def test_a_block_marked_no_run_is_not_run() -> None:
    assert not Block(1, "# docs: no-run (needs OPENAI_API_KEY)\nkey()\n").runs
    assert not Block(1, "\n# docs: no-run\n").runs
    assert Block(1, "x = 1  # docs: no-run is only a marker on the first line\n").runs


def test_a_page_is_marked_slow_by_its_comment_line() -> None:
    assert SLOW_PAGE.search("# Title\n\n<!-- docs: slow (an MCP server over stdio) -->\n")
    assert SLOW_PAGE.search("<!-- docs: slow -->")
    assert not SLOW_PAGE.search("Say `<!-- docs: slow -->` in the page.")
