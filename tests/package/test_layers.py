"""The package's architecture, checked: layers, no import cycles, privacy, module size.

An `ast` walk over every module under `agentcore/` collects every import: module-level ones,
those inside functions (lazy) and those under `if TYPE_CHECKING:`. Five rules, one test each:

- layers: a module never imports a higher layer (`LAYERS`), nor a different package of its
  own layer; the one sanctioned exception is `ALLOWED_UPWARD`.
- cycles: the module import graph has no cycle, counting imports inside functions.
- privacy: another package is imported only through its `__init__` or a public module
  (`PUBLIC_MODULES`); a module-level `_name` is never imported from another module; an
  attribute `x._name` is used only in the package that defines it (trio's rule: the privacy
  boundary is the subpackage), third-party privates only as listed in `FOREIGN_PRIVATES`.
- hygiene: each subpackage `__init__` has a docstring; only the CLI prints.
- size: no module is over `MAX_MODULE_LINES` lines (STYLE.md: keep modules small), except
  those named in `LONGER_MODULES`, each with its reason and its own bound.

Every failure names the file, the line and the rule broken. The last tests run the checker on
a small synthetic package to show that it does catch what it claims to.
"""

from __future__ import annotations

import ast
import functools
import itertools
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from paths import PACKAGE_DIR

LAYERS = {
    "agentcore._core": 0,
    "agentcore._function_tools": 1,
    "agentcore._http": 1,
    "agentcore.providers": 2,
    "agentcore._loop": 3,
    "agentcore._agent": 4,
    "agentcore.batch": 5,
    "agentcore.compaction": 5,
    "agentcore.mcp": 5,
    "agentcore.notebook": 5,
    "agentcore.otel": 5,
    "agentcore.sessions": 5,
    "agentcore.testing": 5,
    "agentcore.web": 5,
    "agentcore.evals": 6,
    "agentcore._cli": 7,
    "agentcore": 8,
    "agentcore.__main__": 8,
}
"""Each package (or public top-level module) and its layer: a lower layer never imports a higher
one, and two packages of the same layer never import each other."""

ALLOWED_UPWARD = {
    ("agentcore._agent._run", "agentcore.notebook"):
        "AgentRun.display() shows the run in Jupyter; the import waits inside the method so "
        "that `import agentcore` never loads the notebook support",
}
"""(importer, imported) edges allowed to go up a layer, only from inside a function. The cycle
rule counts them like any other edge: the higher module must not import the lower one back
(`notebook` knows a run by its interface, not by importing `AgentRun`)."""

PUBLIC_MODULES = {
    "agentcore.batch",
    "agentcore.compaction",
    "agentcore.evals",
    "agentcore.mcp",
    "agentcore.testing",
    "agentcore.notebook",
    "agentcore.otel",
    "agentcore.sessions",
    "agentcore.web",
    "agentcore.providers.faux",
    "agentcore.providers.models",
    "agentcore.providers.openai_completions",
    "agentcore.providers.openai_responses",
    "agentcore.providers.anthropic",
    "agentcore.providers.google",
}
"""Modules anyone may import by path (their names are public API)."""

FOREIGN_PRIVATES = {
    ("agentcore/_http/_urllib3.py", "_connection"):
        "urllib3 keeps a streamed response's connection in `HTTPResponse._connection`; an abort "
        "shuts that socket down to wake the reading thread, which no public API can do",
    ("agentcore/_http/_urllib3.py", "_fp"):
        "the `http.client.HTTPResponse` under urllib3's (`HTTPResponse._fp`): the bulk body "
        "reader reads past its buffer, and the abort's fallback finds the socket through it",
    ("agentcore/_http/_urllib3.py", "_sock"):
        "the socket under that response's `socket.SocketIO`: the bulk reader receives from it "
        "directly, and an abort shuts it down",
    ("agentcore/_http/_urllib3.py", "_new_conn"):
        "urllib3 offers no hook between creating a connection's socket and connecting it: the "
        "override hands the socket to the request's watch first, so an abort cuts a connect",
    ("agentcore/batch/_run.py", "_client"):
        "distributed's `ClientExecutor` keeps its `Client` there and offers no public way to "
        "it; `run_batch` asks it how many threads the cluster has, to size the groups of runs",
    ("agentcore/batch/_run.py", "_max_workers"):
        "`ProcessPoolExecutor`'s worker count, which it does not expose otherwise; the same "
        "group sizing (any other executor counts as the machine's CPUs)",
    ("agentcore/_cli/_console.py", "_replace"):
        "`urlsplit()` returns a named tuple, whose documented way to change a field is "
        "`_replace` (the underscore only keeps it apart from field names)",
}
"""(file, attribute) pairs where agentcore uses a third-party library's private attribute."""

FOREIGN_INTERNALS = {
    "chunk_left": "http.client's and urllib3's count of a chunk's bytes left: the bulk reader "
                  "reads a body only when no chunk was begun by another reader",
    "pool_classes_by_scheme": "urllib3's pool classes per scheme, set on the transport's own "
                              "`PoolManager` so that its connections are the watched ones",
    "ConnectionCls": "the connection class of those pools",
}
"""Undocumented attributes of other libraries that carry no underscore, so the privacy rule
cannot see them: each may appear only in `_http/_urllib3.py`, behind its version gate."""

FOREIGN_INTERNALS_FILE = "agentcore/_http/_urllib3.py"

MAX_MODULE_LINES = 450
"""No module is longer: past this, split it along a seam (STYLE.md aims for about 300), unless
it is named in `LONGER_MODULES` with its reason."""

LONGER_MODULES = {
    "agentcore/_agent/_agent.py": (
        770,
        "`Agent` is one class in one module (API §23): its public methods and its run side (a "
        "run's start, each event applied to the state, a run's end) share private state under "
        "one lock. Split across two files, the run side reached into that state 33 times "
        "(architecture-4 §1); trio keeps one big class in one file for the same reason. What "
        "needs none of that state lives beside it (`_drive`, `_transcript`, `_live`, `_queue`, "
        "`_subagent`, `_handoff`); agents made of agents (API §25) took it past 700, and each "
        "run's hold on its session's lease and `reload()` (API §27) past 760",
    ),
    "agentcore/_loop/_loop.py": (
        480,
        "`Run` is the algorithm of reference/pi-agent-core.md §2.2 in one class, to be read top "
        "to bottom: its turns, model calls (their fallbacks and input guardrails), tool batches "
        "(handoffs, children's pauses) and final reply (output guardrails) share the run's "
        "state; the parts that need none of it live beside it (`_reply`, `_tool_exec`, "
        "`_guardrails`, `_handoff`, `_fallback`, `_limits`, `_output`)",
    ),
}
"""Modules allowed past `MAX_MODULE_LINES`: path -> (their own bound, the reason)."""

_ATTRIBUTE_FUNCTIONS = {"getattr", "hasattr", "setattr", "delattr"}


@dataclass(frozen=True)
class Import:
    """One imported name (or module) as the checker sees it."""

    importer: str
    """The importing module, e.g. `agentcore._loop._loop`."""
    path: str
    """The importing file relative to the package's parent, e.g. `agentcore/_loop/_loop.py`."""
    line: int
    target: str
    """The module actually named: `from .._core import Model` names `agentcore._core`,
    `from . import _sse` names `agentcore.providers._sse`."""
    name: str | None
    """The name imported from `target`, None when the import names the module itself."""
    lazy: bool
    """Inside a function: it runs on the first call, not at import time."""
    type_checking: bool
    """Under `if TYPE_CHECKING:`: it never runs."""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Module:
    """One parsed source file."""

    name: str
    path: str
    tree: ast.Module
    lines: int

    @property
    def is_package(self) -> bool:
        return self.path.endswith("__init__.py")


@dataclass(frozen=True)
class Tree:
    """Every module of a package, and every import between them."""

    root: str
    modules: dict[str, Module]
    imports: list[Import]


def load(package_dir: Path) -> Tree:
    """Parse every module under `package_dir` and collect its imports of the same package."""
    root = package_dir.name
    modules = {}
    for file in sorted(package_dir.rglob("*.py")):
        relative = file.relative_to(package_dir.parent)
        parts = list(relative.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        text = file.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(file))
        modules[name] = Module(name, relative.as_posix(), tree, len(text.splitlines()))
    imports = [imp for module in modules.values() for imp in _imports(module, modules, root)]
    return Tree(root, modules, imports)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(module: Module, modules: dict[str, Module], root: str) -> Iterator[Import]:
    package = module.name if module.is_package else module.name.rpartition(".")[0]

    def visit(node: ast.AST, lazy: bool, type_checking: bool) -> Iterator[Import]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            lazy = True
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                yield from visit(statement, lazy, True)
            for statement in node.orelse:
                yield from visit(statement, lazy, type_checking)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == root or alias.name.startswith(root + "."):
                    yield Import(module.name, module.path, node.lineno, alias.name, None, lazy,
                                 type_checking)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - node.level + 1]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            if base == root or base.startswith(root + "."):
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    if submodule in modules:
                        yield Import(module.name, module.path, node.lineno, submodule, None,
                                     lazy, type_checking)
                    else:
                        yield Import(module.name, module.path, node.lineno, base, alias.name,
                                     lazy, type_checking)
        for child in ast.iter_child_nodes(node):
            yield from visit(child, lazy, type_checking)

    yield from visit(module.tree, False, False)


def unit_of(module: str) -> str | None:
    """The package (key of `LAYERS`) a module belongs to; None when it has no layer."""
    best = None
    for unit in LAYERS:
        inside = module == unit or (unit != "agentcore" and module.startswith(unit + "."))
        if inside and (best is None or len(unit) > len(best)):
            best = unit
    return best


def _rename(module: str, tree: Tree) -> str:
    """`module` with the checked package's name replaced by `agentcore` (for the synthetic tree)."""
    return "agentcore" + module[len(tree.root):]


def _unit(module: str, tree: Tree) -> str | None:
    return unit_of(_rename(module, tree))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def layer_violations(tree: Tree) -> list[str]:
    """Imports that go up a layer or across packages of one layer (TYPE_CHECKING ones too)."""
    found = []
    for module in tree.modules.values():
        if _unit(module.name, tree) is None:
            found.append(f"{module.path}:1: layers: module {module.name} belongs to no layer "
                         "(add its package to LAYERS in tests/package/test_layers.py)")
    for imp in tree.imports:
        source, target = _unit(imp.importer, tree), _unit(imp.target, tree)
        if source is None or target is None or source == target:
            continue
        edge = (_rename(imp.importer, tree), _rename(imp.target, tree))
        if edge in ALLOWED_UPWARD and imp.lazy:
            continue
        if LAYERS[source] < LAYERS[target]:
            found.append(f"{imp.where}: layers: {imp.importer} (layer {LAYERS[source]}) imports "
                         f"{imp.target} (layer {LAYERS[target]}), a higher layer")
        elif LAYERS[source] == LAYERS[target]:
            found.append(f"{imp.where}: layers: {imp.importer} imports {imp.target}, another "
                         f"package of the same layer ({LAYERS[source]})")
    return _sorted(found)


def _graph(tree: Tree) -> dict[str, dict[str, Import]]:
    """importer -> imported -> first import; module-level and lazy imports.

    Imports under `if TYPE_CHECKING:` never run, so they cannot close a cycle and are left out;
    lazy upward edges (`ALLOWED_UPWARD`) count. An edge goes to the module
    the import names, not to the package `__init__`s Python also runs first: a package's
    `__init__` importing its own submodules is then a cycle only when a submodule imports the
    package `__init__` back (`from . import name`), which really is one.
    """
    graph: dict[str, dict[str, Import]] = {name: {} for name in tree.modules}
    for imp in tree.imports:
        if imp.type_checking or imp.target not in tree.modules:
            continue
        graph[imp.importer].setdefault(imp.target, imp)
    return graph


def _strongly_connected(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components in a deterministic order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _cycle_through(start: str, members: set[str], graph: dict[str, dict[str, Import]]) -> list[str]:
    """A shortest cycle from `start` back to itself inside one component (breadth first)."""
    parents: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node]):
            if child not in members:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(parents[path[-1]])
                return [start, *reversed(path[:-1]), start] if node != start else [start, start]
            if child not in parents:
                parents[child] = node
                queue.append(child)
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover


def cycle_violations(tree: Tree) -> list[str]:
    """One message per import cycle (strongly connected component), spelling out one loop."""
    graph = _graph(tree)
    found = []
    for component in _strongly_connected(graph):
        if len(component) == 1 and component[0] not in graph[component[0]]:
            continue
        cycle = _cycle_through(component[0], set(component), graph)
        steps = []
        for importer, imported in itertools.pairwise(cycle):
            imp = graph[importer][imported]
            kind = " (in a function)" if imp.lazy else ""
            steps.append(f"{importer} -> {imported} at {imp.where}{kind}")
        first = graph[cycle[0]][cycle[1]]
        found.append(f"{first.where}: cycles: import cycle among {', '.join(component)}: "
                     + "; ".join(steps))
    return found


def _defined_attributes(tree: Tree) -> dict[str | None, set[str]]:
    """Per package: the attribute names its own code defines.

    That is `self.x = ...` (or `cls.x`, or `setattr(self, "x", ...)` as frozen classes do), a
    class-level annotation or assignment, and a method. A module-level `_name` is not an
    attribute: it is private to its module.
    """
    defined: dict[str | None, set[str]] = {}
    for module in tree.modules.values():
        names = defined.setdefault(_unit(module.name, tree), set())
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                for statement in node.body:
                    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        names.add(statement.name)
                    elif isinstance(statement, ast.AnnAssign) and isinstance(
                            statement.target, ast.Name):
                        names.add(statement.target.id)
                    elif isinstance(statement, ast.Assign):
                        names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
            elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                  and _is_self(node.value)):
                names.add(node.attr)
            elif isinstance(node, ast.Call) and len(node.args) >= 2 and _is_self(node.args[0]):
                function = node.func
                if (isinstance(function, ast.Name) and function.id == "setattr") or (
                        isinstance(function, ast.Attribute) and function.attr == "__setattr__"):
                    attribute = node.args[1]
                    if isinstance(attribute, ast.Constant) and isinstance(attribute.value, str):
                        names.add(attribute.value)
    return defined


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _annotated_class(node: ast.expr | None) -> str | None:
    """The class an annotation names: `T`, `mod.T`, `T | None`, `"T"`; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _annotated_class(node.left) or _annotated_class(node.right)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _created_class(node: ast.expr | None) -> str | None:
    """`T` for a value written `T(...)`."""
    if isinstance(node, ast.Call):
        return _annotated_class(node.func)
    return None


@dataclass(frozen=True)
class PrivateUse:
    """One `x._name` or `getattr(x, "_name")` with x not `self`/`cls`."""

    line: int
    attribute: str
    how: str
    receiver: str | None
    """The class of x when the code says it (an annotation, `x = T(...)`), else None."""


def _private_attribute_uses(module: Module) -> Iterator[PrivateUse]:
    """Every private attribute used on something other than `self` or `cls`.

    The receiver's class is read from what the code says (a parameter's annotation,
    `x: T = ...`, `x = T(...)`, `self.x: T` in the class, `T(...)._x`): enough to tell a
    friend's object of the same package from another package's object when two packages happen
    to use the same private name.
    """

    def fields_of(cls: ast.ClassDef) -> dict[str, str]:
        fields = {}
        target: ast.expr
        for node in ast.walk(cls):
            if isinstance(node, ast.AnnAssign):
                target, kind = node.target, _annotated_class(node.annotation)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, kind = node.targets[0], _created_class(node.value)
            else:
                continue
            if kind is None:
                continue
            if isinstance(target, ast.Name) and node in cls.body:
                fields[target.id] = kind
            elif isinstance(target, ast.Attribute) and _is_self(target.value):
                fields[target.attr] = kind
        return fields

    def locals_of(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
        known = {}
        arguments = function.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            kind = _annotated_class(arg.annotation)
            if kind is not None:
                known[arg.arg] = kind
        target: ast.expr
        for node in ast.walk(function):
            if isinstance(node, ast.AnnAssign):
                target, kind = node.target, _annotated_class(node.annotation)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, kind = node.targets[0], _created_class(node.value)
            else:
                continue
            if isinstance(target, ast.Name) and kind is not None:
                known[target.id] = kind
        return known

    def receiver(node: ast.expr, known: dict[str, str], fields: dict[str, str]) -> str | None:
        if isinstance(node, ast.Name):
            return known.get(node.id)
        if isinstance(node, ast.Attribute) and _is_self(node.value):
            return fields.get(node.attr)
        return _created_class(node)

    def visit(node: ast.AST, known: dict[str, str], fields: dict[str, str]
              ) -> Iterator[PrivateUse]:
        if isinstance(node, ast.ClassDef):
            fields = fields_of(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            known = {**known, **locals_of(node)}
        if isinstance(node, ast.Attribute) and _is_private(node.attr) and not _is_self(
                node.value):
            yield PrivateUse(node.lineno, node.attr, f"{ast.unparse(node.value)}.{node.attr}",
                             receiver(node.value, known, fields))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in _ATTRIBUTE_FUNCTIONS and len(node.args) >= 2
              and not _is_self(node.args[0])):
            attribute = node.args[1]
            if (isinstance(attribute, ast.Constant) and isinstance(attribute.value, str)
                    and _is_private(attribute.value)):
                yield PrivateUse(
                    node.lineno, attribute.value,
                    f"{node.func.id}({ast.unparse(node.args[0])}, {attribute.value!r})",
                    receiver(node.args[0], known, fields))
        for child in ast.iter_child_nodes(node):
            yield from visit(child, known, fields)

    yield from visit(module.tree, {}, {})


@functools.cache
def _uses_of(module: Module) -> tuple[PrivateUse, ...]:
    """`_private_attribute_uses(module)`, walked once for the tests that ask."""
    return tuple(_private_attribute_uses(module))


def _class_packages(tree: Tree) -> dict[str, str | None]:
    """Class name -> the package defining it (None when two packages define that name)."""
    owners: dict[str, str | None] = {}
    for module in tree.modules.values():
        unit = _unit(module.name, tree)
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                owners[node.name] = unit if owners.get(node.name, unit) == unit else None
    return owners


def _sorted(violations: list[str]) -> list[str]:
    """By file, then line number; duplicates dropped."""

    def key(violation: str) -> tuple[str, int, str]:
        path, line, rest = violation.split(":", 2)
        return path, int(line), rest

    return sorted(set(violations), key=key)


def privacy_violations(tree: Tree) -> list[str]:
    """Imports past another package's `__init__`, imported `_names`, private attribute reach-ins."""
    found = []
    for imp in tree.imports:
        source, target = _unit(imp.importer, tree), _unit(imp.target, tree)
        renamed = _rename(imp.target, tree)
        if source != target and renamed != target and renamed not in PUBLIC_MODULES:
            found.append(f"{imp.where}: privacy: {imp.importer} imports {imp.target}, a private "
                         f"module of another package; import from {target} (its __init__)")
        if imp.name is not None and _is_private(imp.name):
            found.append(f"{imp.where}: privacy: {imp.importer} imports the private name "
                         f"{imp.name!r} from {imp.target}; a module-level _name is private to "
                         "its module (make it public inside the package, or re-export it)")
    defined = _defined_attributes(tree)
    owners = _class_packages(tree)
    for module in tree.modules.values():
        unit = _unit(module.name, tree)
        for use in _uses_of(module):
            where = f"{module.path}:{use.line}: privacy: {use.how}"
            owner = owners.get(use.receiver) if use.receiver else None
            if owner is not None:
                if owner != unit:
                    found.append(f"{where} reaches into a private attribute of "
                                 f"{use.receiver}, which {owner} defines (a private name is "
                                 "used only inside the package that defines it)")
            elif (use.attribute not in defined.get(unit, set())
                  and (module.path, use.attribute) not in FOREIGN_PRIVATES):
                found.append(f"{where} reaches into a private attribute that {unit} does not "
                             "define (a private name is used only inside the package that "
                             "defines it)")
    return _sorted(found)


def hygiene_violations(tree: Tree) -> list[str]:
    """A docstring on each subpackage `__init__`, and no `print(` outside the CLI."""
    found = []
    cli = f"{tree.root}._cli"
    for module in tree.modules.values():
        if module.is_package and not ast.get_docstring(module.tree):
            found.append(f"{module.path}:1: hygiene: package {module.name} has no docstring "
                         "(say what the package is and what it may import)")
        if module.name == cli or module.name.startswith(cli + "."):
            continue
        for node in ast.walk(module.tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "print"):
                found.append(f"{module.path}:{node.lineno}: hygiene: print() outside "
                             f"{cli} (a library reports through events, return values, "
                             "logging or exceptions)")
    return _sorted(found)


def size_violations(tree: Tree) -> list[str]:
    """Modules over `MAX_MODULE_LINES` lines, at their first line past the limit."""
    found = []
    for module in tree.modules.values():
        bound = LONGER_MODULES.get(module.path, (MAX_MODULE_LINES, ""))[0]
        if module.lines > bound:
            found.append(f"{module.path}:{bound + 1}: size: module {module.name} has "
                         f"{module.lines} lines, over the {bound} allowed (split it "
                         "along a seam into modules of one purpose each)")
    return _sorted(found)


@functools.cache
def _agentcore() -> Tree:
    return load(PACKAGE_DIR)


def _report(violations: list[str]) -> str:
    return f"{len(violations)} violation(s):\n" + "\n".join(violations)


def test_layers_lower_never_imports_higher() -> None:
    violations = layer_violations(_agentcore())
    assert violations == [], _report(violations)


def test_layers_have_no_import_cycles() -> None:
    violations = cycle_violations(_agentcore())
    assert violations == [], _report(violations)


def test_layers_privacy_boundary_is_the_subpackage() -> None:
    violations = privacy_violations(_agentcore())
    assert violations == [], _report(violations)


def test_layers_packages_have_docstrings_and_only_the_cli_prints() -> None:
    violations = hygiene_violations(_agentcore())
    assert violations == [], _report(violations)


def test_layers_no_module_is_over_the_size_limit() -> None:
    violations = size_violations(_agentcore())
    assert violations == [], _report(violations)


def test_layers_undocumented_foreign_attributes_stay_in_one_module() -> None:
    found: dict[str, set[str]] = {}
    for module in _agentcore().modules.values():
        for node in ast.walk(module.tree):
            name = node.attr if isinstance(node, ast.Attribute) else (
                node.id if isinstance(node, ast.Name) else None)
            if name in FOREIGN_INTERNALS:
                found.setdefault(name, set()).add(module.path)
    assert found == {name: {FOREIGN_INTERNALS_FILE} for name in FOREIGN_INTERNALS}


def test_layers_exceptions_are_all_still_needed() -> None:
    tree = _agentcore()
    edges = {(imp.importer, imp.target) for imp in tree.imports if imp.lazy}
    assert sorted(set(ALLOWED_UPWARD) - edges) == [], "ALLOWED_UPWARD lists an edge that is gone"
    used = {(module.path, use.attribute) for module in tree.modules.values()
            for use in _uses_of(module)}
    stale = sorted(set(FOREIGN_PRIVATES) - used)
    assert stale == [], f"FOREIGN_PRIVATES lists uses that are gone: {stale}"
    lines = {module.path: module.lines for module in tree.modules.values()}
    short = sorted(path for path in LONGER_MODULES if lines.get(path, 0) <= MAX_MODULE_LINES)
    assert short == [], f"LONGER_MODULES lists modules within the usual limit: {short}"


def test_layers_checker_sees_every_kind_of_import() -> None:
    tree = _agentcore()
    assert len(tree.modules) > 40
    assert any(imp.lazy for imp in tree.imports)
    assert any(imp.type_checking for imp in tree.imports)
    assert {unit_of(name) for name in tree.modules} == set(LAYERS)


def _write(root: Path, files: dict[str, str]) -> Tree:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load(root / "agentcore")


_CLEAN = {
    "agentcore/__init__.py": '"""Top."""\nfrom ._loop import run\n',
    "agentcore/_core/__init__.py": '"""Core."""\nfrom ._value import Value\n',
    "agentcore/_core/_value.py": """\
        class Value:
            _cache: int = 0

            def __init__(self) -> None:
                self._seen = 1
        """,
    "agentcore/_loop/__init__.py": '"""Loop."""\nfrom ._run import run\n',
    "agentcore/_core/_peek.py": """\
        from ._value import Value

        def peek(value: Value) -> int:
            return value._seen + value._cache
        """,
    "agentcore/_loop/_run.py": """\
        from .._core import Value

        def run() -> Value:
            return Value()
        """,
}


def test_layers_checker_passes_a_clean_tree(tmp_path: Path) -> None:
    tree = _write(tmp_path, _CLEAN)
    assert layer_violations(tree) == []
    assert cycle_violations(tree) == []
    assert privacy_violations(tree) == []
    assert hygiene_violations(tree) == []


def test_layers_checker_reports_an_upward_import(tmp_path: Path) -> None:
    tree = _write(tmp_path, {
        **_CLEAN,
        "agentcore/_core/_render.py": """\
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from .._loop import run
            """,
    })
    assert layer_violations(tree) == [
        "agentcore/_core/_render.py:4: layers: agentcore._core._render (layer 0) imports "
        "agentcore._loop (layer 3), a higher layer",
    ]


def test_layers_checker_reports_a_function_level_cycle(tmp_path: Path) -> None:
    tree = _write(tmp_path, {
        **_CLEAN,
        "agentcore/_core/_value.py": """\
            class Value:
                def show(self) -> str:
                    from ._render import render
                    return render(self)
            """,
        "agentcore/_core/_render.py": "from ._value import Value\n",
    })
    [violation] = cycle_violations(tree)
    assert violation.startswith("agentcore/_core/_render.py:1: cycles: import cycle among "
                                "agentcore._core._render, agentcore._core._value: ")
    assert "agentcore/_core/_value.py:3 (in a function)" in violation


def test_layers_checker_reports_a_cycle_through_an_allowed_upward_edge(tmp_path: Path) -> None:
    tree = _write(tmp_path, {
        **_CLEAN,
        "agentcore/_agent/__init__.py": '"""Agent."""\n',
        "agentcore/_agent/_run.py": """\
            def display() -> None:
                from ..notebook import show
                show()
            """,
        "agentcore/notebook.py": "from ._agent._run import display\n",
    })
    assert layer_violations(tree) == []
    [violation] = cycle_violations(tree)
    assert violation.startswith("agentcore/_agent/_run.py:2: cycles: import cycle among "
                                "agentcore._agent._run, agentcore.notebook: ")


def test_layers_checker_reports_private_reach_ins(tmp_path: Path) -> None:
    tree = _write(tmp_path, {
        **_CLEAN,
        "agentcore/_loop/_peek.py": """\
            from .._core._value import Value
            from .._core import _helper

            def peek(value: Value, stream: object) -> object:
                return value._cache, getattr(stream, "_queue"), stream._queue
            """,
    })
    assert privacy_violations(tree) == [
        "agentcore/_loop/_peek.py:1: privacy: agentcore._loop._peek imports "
        "agentcore._core._value, a private module of another package; import from "
        "agentcore._core (its __init__)",
        "agentcore/_loop/_peek.py:2: privacy: agentcore._loop._peek imports the private name "
        "'_helper' from agentcore._core; a module-level _name is private to its module (make it "
        "public inside the package, or re-export it)",
        "agentcore/_loop/_peek.py:5: privacy: getattr(stream, '_queue') reaches into a private "
        "attribute that agentcore._loop does not define (a private name is used only inside "
        "the package that defines it)",
        "agentcore/_loop/_peek.py:5: privacy: stream._queue reaches into a private attribute "
        "that agentcore._loop does not define (a private name is used only inside the package "
        "that defines it)",
        "agentcore/_loop/_peek.py:5: privacy: value._cache reaches into a private attribute of "
        "Value, which agentcore._core defines (a private name is used only inside the package "
        "that defines it)",
    ]


def test_layers_checker_reports_print_and_missing_docstring(tmp_path: Path) -> None:
    tree = _write(tmp_path, {
        **_CLEAN,
        "agentcore/_loop/__init__.py": "from ._run import run\nprint(run)\n",
    })
    assert hygiene_violations(tree) == [
        "agentcore/_loop/__init__.py:1: hygiene: package agentcore._loop has no docstring (say "
        "what the package is and what it may import)",
        "agentcore/_loop/__init__.py:2: hygiene: print() outside agentcore._cli (a library "
        "reports through events, return values, logging or exceptions)",
    ]


def test_layers_checker_reports_a_module_over_the_size_limit(tmp_path: Path) -> None:
    body = "".join(f"X{n} = {n}\n" for n in range(MAX_MODULE_LINES))
    tree = _write(tmp_path, {
        **_CLEAN,
        "agentcore/_core/_big.py": f'"""Big."""\n{body}',
        "agentcore/_core/_full.py": body,
    })
    assert size_violations(tree) == [
        f"agentcore/_core/_big.py:{MAX_MODULE_LINES + 1}: size: module agentcore._core._big has "
        f"{MAX_MODULE_LINES + 1} lines, over the {MAX_MODULE_LINES} allowed (split it along a "
        "seam into modules of one purpose each)",
    ]
