"""Print pip constraints pinning each core dependency to the lowest version `setup.cfg` admits.

Every line of `install_requires` must name a floor (`name>=X`, optionally with an upper bound
after a comma); it becomes `name==X`. A dependency without a floor, or with a form this script
does not understand, is an error: the floors CI stage (`.ci/run`) would otherwise test a version
nobody chose. `tests/package/test_floors.py` loads this file too, to check that the floors
`import agentcore` enforces (`agentcore/_core/_floors.py`) are these.

Usage: python .ci/floors.py [setup.cfg]  >constraints.txt
"""

from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_FLOOR = re.compile(r">=\s*([0-9][0-9A-Za-z.]*)")
_UPPER = re.compile(r"(<|<=|!=)\s*[0-9][0-9A-Za-z.*]*")


def floors(setup_cfg: Path) -> dict[str, str]:
    """`install_requires` of `setup_cfg` as {distribution name: lowest version}, in order."""
    parser = configparser.ConfigParser()
    if not parser.read(setup_cfg, encoding="utf-8"):
        raise SystemExit(f"floors.py: cannot read {setup_cfg}")
    found: dict[str, str] = {}
    for line in parser.get("options", "install_requires").splitlines():
        requirement = line.split("#", 1)[0].strip()
        if not requirement:
            continue
        name = _NAME.match(requirement)
        if name is None or ";" in requirement or "[" in requirement:
            raise SystemExit(f"floors.py: cannot read the requirement {requirement!r}")
        specifiers = [part.strip() for part in requirement[name.end():].split(",")]
        lowest = [match.group(1) for part in specifiers if (match := _FLOOR.fullmatch(part))]
        others = [part for part in specifiers if not _FLOOR.fullmatch(part)]
        if len(lowest) != 1 or not all(_UPPER.fullmatch(part) for part in others):
            raise SystemExit(f"floors.py: {requirement!r} needs exactly one floor, as "
                             f"'{name.group()}>=X': the floors CI stage installs X")
        found[name.group()] = lowest[0]
    return found


def main() -> None:
    """Print one `name==floor` line per core dependency."""
    default = Path(__file__).resolve().parent.parent / "setup.cfg"
    setup_cfg = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    for name, version in floors(setup_cfg).items():
        print(f"{name}=={version}")


if __name__ == "__main__":
    main()
