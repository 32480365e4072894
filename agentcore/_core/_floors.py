"""The lowest version of each dependency agentcore works with, checked when it is imported.

`setup.cfg` declares these floors and `.ci/run` tests them (its floors stage installs exactly
these versions and runs the fast tier); `tests/package/test_floors.py` checks that the two
lists agree. Importing this module, the first thing `agentcore._core` does, before any module
defines a class, raises an `ImportError` naming each dependency installed below its floor: an
old urllib3 fails `import agentcore` with a message saying what to upgrade, not the first
request with a confusing one.

The versions are read off the names of the `.dist-info` folders on `sys.path`, which is what
`importlib.metadata.version` finds, without importing that module and `email` with it (about
15 ms, a sixth of `import agentcore`) or the dependencies themselves (requests and urllib3 load
only when a request is made).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["FLOORS", "check_floors", "installed_versions"]

FLOORS: Final[Mapping[str, str]] = MappingProxyType({
    "attrs": "24.2",
    "cattrs": "24.1",
    "requests": "2.31",
    # 2.2 for HTTPResponse.read1 (a compressed reply's body); 2.2.1 because no botocore of the
    # bedrock extra installs beside 2.2.0, which the floors stage could then not test
    "urllib3": "2.2.1",
    "jsonschema": "4.20",
})
"""Each dependency's distribution name and the lowest version agentcore works with."""

_RELEASE = re.compile(r"\d+(?:\.\d+)*")
_INFO_SUFFIXES = (".dist-info", ".egg-info")


def _normalized(name: str) -> str:
    """A distribution name as its metadata folder spells it, lower-cased (PEP 503)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_versions(names: Iterable[str]) -> dict[str, str | None]:
    """The installed version of each distribution in `names`, None for one not installed.

    The first `sys.path` entry whose `<name>-<version>.dist-info` (or `.egg-info`) folder names
    a distribution gives its version, as for `importlib.metadata.version`; a distribution no
    such name gives a version for (a zipped or legacy install) is asked of `importlib.metadata`.
    """
    wanted = {_normalized(name): name for name in names}
    found: dict[str, str | None] = {}
    for entry in sys.path:
        if len(found) == len(wanted):
            break
        try:
            children = os.listdir(entry or ".")
        except OSError:  # a zip file, or a folder that is gone
            continue
        for child in children:
            if not child.endswith(_INFO_SUFFIXES):
                continue
            project, _, version = child.rpartition(".")[0].partition("-")
            name = wanted.get(_normalized(project))
            if name is not None and name not in found and version:
                found[name] = version.partition("-")[0]  # an egg's `-py3.11` tail
    return {name: found[name] if name in found else _metadata_version(name)
            for name in wanted.values()}


def _metadata_version(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _release(version: str) -> tuple[int, ...] | None:
    """The release numbers of `version` ("2.31.0rc1" gives (2, 31, 0)); None if unreadable."""
    match = _RELEASE.match(version)
    if match is None or "!" in version:  # an epoch: nothing a floor here compares with
        return None
    return tuple(int(part) for part in match.group().split("."))


def _below(version: str, floor: str) -> bool:
    installed, lowest = _release(version), _release(floor)
    if installed is None or lowest is None:
        return False
    width = max(len(installed), len(lowest))
    return installed + (0,) * (width - len(installed)) < lowest + (0,) * (width - len(lowest))


def check_floors(installed: Mapping[str, str | None]) -> None:
    """Raise `ImportError` naming every dependency whose `installed` version is below its floor.

    A dependency not installed, or of a version with no release numbers to compare, passes:
    importing it fails on its own, and an unusual version is not refused on a guess.
    """
    below = [(name, floor, version) for name, floor in FLOORS.items()
             if (version := installed.get(name)) is not None and _below(version, floor)]
    if not below:
        return
    needs = " and ".join(f"{name}>={floor} (installed: {version})"
                         for name, floor, version in below)
    upgrades = " ".join(f"'{name}>={floor}'" for name, floor, _ in below)
    pronoun = "it" if len(below) == 1 else "them"
    raise ImportError(f"agentcore needs {needs}; upgrade {pronoun}: pip install -U {upgrades}")


check_floors(installed_versions(FLOORS))
