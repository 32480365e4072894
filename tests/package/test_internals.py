"""Tests reach agentcore's private modules only through `tests/_internals.py`.

A private module is `agentcore._x` or `agentcore.x._y` (any dotted part starting with one
underscore). Every test file but `_internals.py` imports none (at module level or inside a
function), imports no `_name` from agentcore, and names none in a string that is executed or
looked up (a logger's name, a `monkeypatch.setattr` target, the code of a subprocess): such a
name breaks as surely as an import when the module moves. Docstrings and comments may name
modules. `test_layers.py` and this file are spared the string rule only: their strings are the
synthetic packages and sources their checkers are tested on.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from paths import TESTS

GATEWAY = TESTS / "_internals.py"
STRINGS_ARE_SAMPLES = {TESTS / "package" / "test_layers.py", Path(__file__).resolve()}

_PRIVATE_PATH = re.compile(r"\bagentcore(?:\.\w+)*\._(?!_)\w*")
_PRIVATE_FROM = re.compile(r"\bfrom\s+agentcore(?:\.\w+)*\s+import\s+\(?[\w\s,]*\b_(?!_)\w*")
_MAYBE = re.compile(r"\bagentcore(?:\.\w+)*\._|\bfrom\s+agentcore[\w.]*\s+import\s+[^(\n]*\b_")
_GROUP = re.compile(r"\bfrom\s+agentcore[\w.]*\s+import\s*\(([^)]*)\)")


def _may_reach_in(text: str) -> bool:
    """False when `text` has nothing to report, without an AST: no private dotted path, and no
    `from agentcore... import` naming a `_name` (on its line or in its parentheses)."""
    return bool(_MAYBE.search(text)) or any(
        re.search(r"\b_", group) for group in _GROUP.findall(text))


def _is_private_module(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "agentcore" and any(
        part.startswith("_") and not part.startswith("__") for part in parts[1:])


def private_reach_ins(source: str, *, check_strings: bool = True) -> Iterator[tuple[int, str]]:
    """(line, what) for each private agentcore module that `source` imports or names."""
    if not _may_reach_in(source):
        return
    docstrings: set[int] = set()  # strings standing alone as statements: never used as values
    for node in ast.walk(ast.parse(source)):  # breadth first: an `Expr` before its value
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            docstrings.add(id(node.value))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_private_module(alias.name):
                    yield node.lineno, f"import {alias.name}"
        elif (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
              and node.module.split(".")[0] == "agentcore"):
            if _is_private_module(node.module):
                yield node.lineno, f"from {node.module} import ..."
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield node.lineno, f"from {node.module} import {alias.name}"
        elif (check_strings and isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in docstrings):
            found = _PRIVATE_PATH.search(node.value) or _PRIVATE_FROM.search(node.value)
            if found:
                yield node.lineno, f"the string names {found.group()!r}"


def test_internals_is_the_only_way_in() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path == GATEWAY:
            continue
        for line, what in private_reach_ins(path.read_text(),
                                            check_strings=path not in STRINGS_ARE_SAMPLES):
            found.append(f"{path.relative_to(TESTS)}:{line}: {what}")
    assert not found, ("import private agentcore names from `_internals` (add them there); in "
                       "a string, derive the module's name from an object (`mod.__name__`):\n"
                       + "\n".join(found))


def test_internals_checker_sees_every_kind_of_reach_in() -> None:
    source = '''
"""A docstring may name agentcore._core."""
import agentcore
import agentcore._agent._drive as drive
from agentcore import _cli, testing
from agentcore._core import Model
from agentcore.providers import _http, faux
from agentcore.providers._sse import SSEDecoder
from agentcore.providers.faux import FauxProvider


def lazy():
    from agentcore._loop import observe


LOGGER = "agentcore._agent._drive"
CODE = "import sys; from agentcore.providers import (faux, _registry)"
FINE = ["agentcore.providers.faux", "agentcore.__main__", "_internals"]
'''
    assert sorted(private_reach_ins(source)) == [
        (4, "import agentcore._agent._drive"),
        (5, "from agentcore import _cli"),
        (6, "from agentcore._core import ..."),
        (7, "from agentcore.providers import _http"),
        (8, "from agentcore.providers._sse import ..."),
        (13, "from agentcore._loop import ..."),
        (16, "the string names 'agentcore._agent._drive'"),
        (17, "the string names 'from agentcore.providers import (faux, _registry'"),
    ]
    assert sorted(line for line, _ in private_reach_ins(source, check_strings=False)) == [
        4, 5, 6, 7, 8, 13]
