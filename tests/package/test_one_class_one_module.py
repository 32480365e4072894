"""`Agent` and `AgentRun` are each one class in one module (API §23).

An `ast` walk over `agentcore/_agent`: no module but the class's own touches the class's
private state (`agent._lock`, `run._native`, `getattr(agent, "_run")`, ...). Helper modules
get what they work on as arguments or callables. The package-wide privacy rule of
`test_layers.py` stops at the package boundary; this one holds inside the package, where the
class's friends live. The last tests run the checker on small sources to show it catches what
it claims to.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from paths import PACKAGE_DIR

AGENT_PACKAGE = PACKAGE_DIR / "_agent"

OWNERS = {"Agent": "_agent.py", "AgentRun": "_run.py"}
"""Each class and the one module (in `agentcore/_agent`) that may touch its private state."""

_ATTRIBUTE_FUNCTIONS = {"getattr", "hasattr", "setattr", "delattr"}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def private_members(tree: ast.Module, class_name: str) -> set[str]:
    """The private names of `class_name`: its `_fields`, `_methods` and `self._attributes`."""
    [cls] = [node for node in tree.body
             if isinstance(node, ast.ClassDef) and node.name == class_name]
    names: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in cls.body:
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id == "self":
            names.add(node.attr)
    return {name for name in names if _is_private(name)}


def _on_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _reaches(node: ast.Attribute | ast.Call, members: set[str]) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in members and not _on_self(node.value)
    if not isinstance(node, ast.Call) or len(node.args) < 2:
        return False
    by_name = (isinstance(node.func, ast.Name) and node.func.id in _ATTRIBUTE_FUNCTIONS) or (
        isinstance(node.func, ast.Attribute) and node.func.attr == "__setattr__")
    name = node.args[1]
    return (by_name and isinstance(name, ast.Constant) and name.value in members
            and not _on_self(node.args[0]))


def reach_ins(tree: ast.Module, members: set[str]) -> list[tuple[int, str]]:
    """Every `x._name` or `getattr(x, "_name")` of a name in `members`, x not `self`/`cls`."""
    return sorted((node.lineno, ast.unparse(node)) for node in ast.walk(tree)
                  if isinstance(node, (ast.Attribute, ast.Call)) and _reaches(node, members))


def violations(package: Path, owners: dict[str, str]) -> list[str]:
    """`path:line: text` for each reach into an owned class's private state from elsewhere."""
    trees = {file.name: ast.parse(file.read_text(encoding="utf-8"))
             for file in sorted(package.glob("*.py"))}
    found = []
    for class_name, home in owners.items():
        members = private_members(trees[home], class_name)
        assert members, f"{class_name} has no private state in {home}: is it still there?"
        for name, tree in trees.items():
            if name == home:
                continue
            found += [f"{package.name}/{name}:{line}: {text} touches {class_name}'s private "
                      f"state, which only {home} may" for line, text in reach_ins(tree, members)]
    return found


def test_one_class_one_module_agent_and_run_keep_their_state_to_themselves() -> None:
    found = violations(AGENT_PACKAGE, OWNERS)
    assert found == [], "\n".join(found)


def test_one_class_one_module_sees_the_classes_private_state() -> None:
    trees = {name: ast.parse((AGENT_PACKAGE / home).read_text(encoding="utf-8"))
             for name, home in OWNERS.items()}
    agent = private_members(trees["Agent"], "Agent")
    run = private_members(trees["AgentRun"], "AgentRun")
    assert {"_lock", "_live", "_run", "_writer", "_handle", "_prepare"} <= agent
    assert {"_native", "_log", "_messages", "_pending", "_wait"} <= run


def _write(root: Path, files: dict[str, str]) -> Path:
    package = root / "_agent"
    package.mkdir()
    for name, text in files.items():
        (package / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return package


_AGENT = """\
    class Agent:
        _lock: object

        def __init__(self) -> None:
            self._run = None

        def _start(self) -> None:
            self._run = self._lock
    """


def test_one_class_one_module_checker_allows_the_class_own_module(tmp_path: Path) -> None:
    package = _write(tmp_path, {
        "_agent.py": _AGENT + """\

            def helper(agent: Agent) -> None:
                agent._start()  # the class's own module: its friend
            """,
        "_other.py": """\
            def other(queue: object) -> object:
                return queue._queued, queue.lock  # not Agent's names
            """,
    })
    assert violations(package, {"Agent": "_agent.py"}) == []


def test_one_class_one_module_checker_reports_reach_ins(tmp_path: Path) -> None:
    package = _write(tmp_path, {
        "_agent.py": _AGENT,
        "_drive.py": """\
            def drive(agent: object) -> None:
                with agent._lock:
                    agent._start()
                setattr(agent, "_run", None)
                object.__setattr__(agent, "_run", None)
            """,
    })
    assert violations(package, {"Agent": "_agent.py"}) == [
        f"_agent/_drive.py:{line}: {text} touches Agent's private state, which only "
        "_agent.py may" for line, text in [
            (2, "agent._lock"), (3, "agent._start"), (4, "setattr(agent, '_run', None)"),
            (5, "object.__setattr__(agent, '_run', None)")]]
