"""Jupyter display: watch a run live below the cell that started it, with no `await`.

::

    run = agent.prompt("What's the weather in Paris?")
    run.display()  # returns at once; the output below the cell follows the run

`display(run)` shows one `text/markdown` output (the view `AgentRun._repr_markdown_` gives) and
updates it in place as the run's events arrive. A helper thread follows the run and ends with
it; it waits on the run's event log (`AgentRun.wait_for_news`), so it needs no agent, no
listener and no polling. A run is recognised by its interface (`Watchable`, which `AgentRun`
has), not its class: this module never imports the agent, which imports it back for
`AgentRun.display()`.
Updates come at most ten times a second (less often for long transcripts, so that roughly a
megabyte a second at most goes to the browser), and once more, at once, when the run ends.

The run waits (up to a few seconds) for its display to show the final view before `result()`
returns, so a cell that waits for the result also leaves the finished view behind in a
notebook executed headless (nbclient, nbconvert, papermill). Outside a Jupyter kernel nothing
can be updated in place, so only the final view is shown (printed as Markdown text in plain
Python). IPython is imported only by `display`.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._core import AbortSignal, AgentEvent, AgentMessage, message_markdown, run_markdown

if TYPE_CHECKING:
    from ._agent import AgentRun

__all__ = ["display"]

_log = logging.getLogger(__name__)

MIN_INTERVAL_S = 0.1
"""The shortest time between two updates of a run's output."""
BYTES_PER_S = 1_000_000
"""About how much a run's output sends a second: long views update less often than 10/s."""

_Publish = Callable[[str, bool], None]
"""`publish(markdown, final)`: show a view of a run."""


@runtime_checkable
class Watchable(Protocol):
    """What `display` needs of a run, all of which an `AgentRun` has (see its methods)."""

    @property
    def name(self) -> str: ...
    @property
    def signal(self) -> AbortSignal: ...
    def counted_snapshot(self) -> tuple[list[AgentEvent], bool, int]: ...
    def wait_for_news(self, seen: int, timeout: float | None = None) -> bool: ...
    def wait_for_end(self, timeout: float | None = None) -> bool: ...
    def add_finisher(self, finisher: Callable[[], None]) -> bool: ...
    def result(self, timeout: float | None = None) -> list[AgentMessage]: ...


if TYPE_CHECKING:
    _AGENT_RUN_IS_WATCHABLE: type[Watchable] = AgentRun  # mypy checks that it has it all


def display(obj: object, *, wait: bool = False) -> None:
    """Show a run, updated live until it ends, or a message, in Jupyter.

    For a run (an `AgentRun`, or any `Watchable`) this returns at once (the output follows the
    run from a helper thread that ends with it), or with `wait=True` once the run has ended
    and its final view is shown; a `KeyboardInterrupt` while waiting aborts the run, as
    `run.result()` does. Any message (an object with a `role`) is shown once, as Markdown.

    Raises:
        ImportError: IPython is not installed.
        TypeError: `obj` is neither a run nor a message.
    """
    ipython = _import_ipython()
    if isinstance(obj, Watchable):
        _display_run(obj, _publisher(ipython), wait)
    elif isinstance(getattr(obj, "role", None), str):
        _publisher(ipython)(message_markdown(obj), True)
    else:
        raise TypeError(f"display: expected an AgentRun or a message, got {obj!r}")


def _import_ipython() -> Any:
    try:
        importlib.import_module("IPython.display")
        return importlib.import_module("IPython")  # typed as Any: IPython stays optional
    except ImportError as exc:
        raise ImportError(
            "agentcore.notebook.display needs IPython: run it in Jupyter, or install IPython "
            "(`pip install ipython`)"
        ) from exc


def _publisher(ipython: Any) -> _Publish:
    """Where views go: one output updated in place in a kernel, else only the final view."""
    shell = ipython.get_ipython()
    handle: Any = None

    def publish(markdown: str, final: bool) -> None:
        nonlocal handle
        if shell is None:  # plain Python, where IPython's display would print a dict
            if final:
                sys.stdout.write(markdown + "\n")
        elif getattr(shell, "kernel", None) is None:  # a terminal shell prints every update
            if final:
                ipython.display.display(_bundle(markdown, markdown), raw=True)
        else:  # a kernel's frontend shows the Markdown; keep the plain text short
            bundle = _bundle(markdown, markdown.split("\n", 1)[0])
            if handle is None:
                handle = ipython.display.display(bundle, raw=True, display_id=True)
            else:
                handle.update(bundle, raw=True)

    return publish


FINAL_VIEW_TIMEOUT_S = 5.0
"""How long a finishing run waits for its display to show the final view."""


def _bundle(markdown: str, plain: str) -> dict[str, str]:
    return {"text/markdown": markdown, "text/plain": plain}


def _display_run(run: Watchable, publish: _Publish, wait: bool) -> None:
    events, ended, published = run.counted_snapshot()
    publish(_view(run, events), ended)  # here, so that the output belongs to the calling cell
    if ended:
        return
    thread = threading.Thread(target=_follow, args=(run, publish, published),
                              name=f"{run.name}-display")
    thread.start()
    # The run waits for the final view before `result()` returns, so that even a notebook
    # executed headless (nbclient, papermill) saves the finished view. A run already
    # finishing is past waiting for anything: then this cell waits the instant it takes.
    if not run.add_finisher(lambda: thread.join(FINAL_VIEW_TIMEOUT_S)):
        thread.join(FINAL_VIEW_TIMEOUT_S)
    if wait:
        run.result()  # a KeyboardInterrupt here aborts the run; the thread shows the end
        thread.join()


def _follow(run: Watchable, publish: _Publish, shown: int) -> None:
    """Publish views of `run` until it has ended: throttled, then the final one at once.

    `shown` counts the events published (dropped ones included) that the last view showed.
    """
    next_at = 0.0
    try:
        while True:
            run.wait_for_news(shown)
            delay = next_at - time.monotonic()
            if delay > 0:  # throttled: gather events until the next slot or the end
                run.wait_for_end(delay)
            # Copies, rendered outside the lock the run records under.
            events, ended, published = run.counted_snapshot()
            if published == shown:  # finished, everything shown
                return
            shown = published
            view = _view(run, events)
            publish(view, ended)
            if ended:
                return
            next_at = time.monotonic() + max(MIN_INTERVAL_S, len(view) / BYTES_PER_S)
    except Exception:  # a broken display must not take anything else down
        _log.exception("agentcore.notebook: stopped updating the display of %r", run)


def _view(run: Watchable, events: Sequence[AgentEvent]) -> str:
    return run_markdown(events, abort_requested=run.signal.aborted)
