"""How a batch shows its progress: a callback, tqdm, a live line in Jupyter, or a line on stderr."""

from __future__ import annotations

import importlib
import logging
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

from ._result import BatchResult

__all__ = ["Progress", "progress_for"]

_log = logging.getLogger(__name__)

_LINE_EVERY_S = 0.1  # the plain line and the Jupyter display redraw at most this often


class Progress(Protocol):
    """Told of each result on the thread iterating the batch, then closed once."""

    def update(self, done: int, total: int, result: BatchResult) -> None: ...

    def close(self) -> None: ...


def progress_for(progress: object, total: int) -> Progress | None:
    """The reporter for `run_batch(progress=...)`: None, True or a callable."""
    if progress is None or progress is False:
        return None
    if progress is True:
        if _in_jupyter():
            return _tqdm(total, notebook=True) or _JupyterLine(total)
        return _tqdm(total, notebook=False) or _StderrLine(total)
    assert callable(progress)
    return _Callback(progress)


class _Callback:
    """The caller's `progress(done, total, result)`; one that raises is logged, never fatal."""

    def __init__(self, fn: Callable[[int, int, BatchResult], object]) -> None:
        self._fn = fn
        self._warned = False

    def update(self, done: int, total: int, result: BatchResult) -> None:
        try:
            self._fn(done, total, result)
        except Exception:
            if not self._warned:  # once: a broken callback must not flood the log
                _log.exception("the batch's progress callback %r raised; the batch goes on",
                               self._fn)
                self._warned = True

    def close(self) -> None:
        pass


def _summary(done: int, total: int, failed: int, started: float) -> str:
    failures = f", {failed} failed" if failed else ""
    return f"batch: {done}/{total} runs{failures}, {time.monotonic() - started:.1f} s"


class _Tqdm:
    """A tqdm bar (tqdm.notebook's widget in Jupyter), counting failures in its postfix."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar
        self._failed = 0

    def update(self, done: int, total: int, result: BatchResult) -> None:
        if result.error is not None:
            self._failed += 1
            self._bar.set_postfix(failed=self._failed, refresh=False)
        self._bar.update(1)

    def close(self) -> None:
        self._bar.close()


def _tqdm(total: int, notebook: bool) -> _Tqdm | None:
    """A tqdm bar when tqdm (and, in Jupyter, ipywidgets) is installed; else None."""
    try:
        if notebook:
            importlib.import_module("ipywidgets")  # tqdm.notebook draws with it
        base = importlib.import_module("tqdm.notebook" if notebook else "tqdm").tqdm
    except ImportError:
        return None
    # No monitor thread (it would outlive the batch): the bar redraws as results arrive
    bar = type("BatchBar", (base,), {"monitor_interval": 0})
    return _Tqdm(bar(total=total, desc="batch", unit="run"))


class _StderrLine:
    """One line on stderr, redrawn in place at most every 0.1 s, ended by `close()`."""

    def __init__(self, total: int) -> None:
        self._started = time.monotonic()
        self._drawn = 0.0
        self._failed = 0
        self._last = ""
        self._draw(_summary(0, total, 0, self._started))

    def update(self, done: int, total: int, result: BatchResult) -> None:
        self._failed += result.error is not None
        self._last = _summary(done, total, self._failed, self._started)
        if done == total or time.monotonic() - self._drawn >= _LINE_EVERY_S:
            self._draw(self._last)

    def _draw(self, text: str) -> None:
        self._drawn = time.monotonic()
        sys.stderr.write(f"\r{text}")
        sys.stderr.flush()

    def close(self) -> None:
        if self._last:
            self._draw(self._last)
        sys.stderr.write("\n")
        sys.stderr.flush()


class _JupyterLine:
    """The same line as a display in the notebook, updated in place."""

    def __init__(self, total: int) -> None:
        display = importlib.import_module("IPython.display").display
        self._started = time.monotonic()
        self._drawn = 0.0
        self._failed = 0
        self._last = _summary(0, total, 0, self._started)
        self._handle = display(_Text(self._last), display_id=True)

    def update(self, done: int, total: int, result: BatchResult) -> None:
        self._failed += result.error is not None
        self._last = _summary(done, total, self._failed, self._started)
        if done == total or time.monotonic() - self._drawn >= _LINE_EVERY_S:
            self._drawn = time.monotonic()
            self._handle.update(_Text(self._last))

    def close(self) -> None:
        self._handle.update(_Text(self._last))


class _Text:
    """Plain text for IPython's display machinery."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _in_jupyter() -> bool:
    """Whether this runs in a Jupyter kernel (IPython's ZMQ shell), without importing IPython."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"
