"""The dependency floors: `import agentcore` enforces the ones `setup.cfg` declares and CI tests.

`agentcore._core._floors.FLOORS` must be `setup.cfg`'s `install_requires` as `.ci/floors.py`
reads it (the floors stage of `.ci/run` installs exactly those versions). A dependency below
its floor fails the import with an `ImportError` that names it, the version found and the one
needed; the versions are read off `.dist-info` folder names, as `importlib.metadata` finds them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import paths
import pytest
from _internals import FLOORS, check_floors, installed_versions


def ci_floors() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_floors", paths.ROOT / ".ci" / "floors.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_dist_info(folder: Path, name: str, version: str) -> None:
    """A `.dist-info` folder as pip leaves one, for a distribution that is not really there."""
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_floors_are_setup_cfgs_install_requires() -> None:
    assert dict(FLOORS) == ci_floors().floors(paths.ROOT / "setup.cfg")


def test_floors_ci_refuses_a_dependency_without_a_floor(tmp_path: Path) -> None:
    setup_cfg = tmp_path / "setup.cfg"
    setup_cfg.write_text("[options]\ninstall_requires =\n    attrs>=24.2,<27\n    requests\n")
    with pytest.raises(SystemExit, match=r"'requests' needs exactly one floor"):
        ci_floors().floors(setup_cfg)


def test_floors_a_dependency_below_its_floor_is_named_with_both_versions() -> None:
    with pytest.raises(ImportError) as info:
        check_floors({**FLOORS, "urllib3": "1.26.20"})
    assert str(info.value) == ("agentcore needs urllib3>=2.2.1 (installed: 1.26.20); "
                               "upgrade it: pip install -U 'urllib3>=2.2.1'")


def test_floors_every_dependency_below_its_floor_is_named() -> None:
    with pytest.raises(ImportError) as info:
        check_floors({"attrs": "23.2.0", "requests": "2.28.1", "jsonschema": "4.26.0"})
    assert str(info.value) == (
        "agentcore needs attrs>=24.2 (installed: 23.2.0) and requests>=2.31 (installed: 2.28.1); "
        "upgrade them: pip install -U 'attrs>=24.2' 'requests>=2.31'")


@pytest.mark.parametrize("version", ["2.2.1", "2.2.1.0", "2.2.2", "2.10", "3", "2.2.1.post1",
                                     "2.3.0rc1", "2.2.1+local", "2.3.dev0", "unknown", "1!1.0"])
def test_floors_a_version_at_or_above_its_floor_or_unreadable_passes(version: str) -> None:
    check_floors({**FLOORS, "urllib3": version})


@pytest.mark.parametrize("version", ["2.2", "2.2.0", "2.1.99", "1.26.20", "0"])
def test_floors_a_version_below_its_floor_fails(version: str) -> None:
    with pytest.raises(ImportError, match=rf"needs urllib3>=2\.2\.1 \(installed: {version}\)"):
        check_floors({**FLOORS, "urllib3": version})


def test_floors_a_dependency_not_installed_passes() -> None:
    check_floors({})


def test_floors_installed_versions_are_importlib_metadatas() -> None:
    names = [*FLOORS, "pytest", "hypothesis"]
    assert installed_versions(names) == {name: importlib.metadata.version(name) for name in names}
    assert installed_versions(["no-such-distribution"]) == {"no-such-distribution": None}


def test_floors_the_first_dist_info_on_the_path_gives_the_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dist_info(tmp_path / "first", "urllib3", "1.26.20")
    (tmp_path / "second" / "requests-2.28.1-py3.11.egg-info").mkdir(parents=True)
    fake_dist_info(tmp_path / "second", "urllib3", "2.0.7")
    fake_dist_info(tmp_path / "second", "Jinja2", "3.1.4")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "gone"), str(tmp_path / "first"),
                                      str(tmp_path / "second"), *sys.path])
    assert installed_versions(["urllib3", "requests", "jinja2"]) == {
        "urllib3": "1.26.20", "requests": "2.28.1", "jinja2": "3.1.4"}


@pytest.mark.slow
def test_floors_import_agentcore_with_an_old_urllib3_names_it(tmp_path: Path) -> None:
    """The real thing: an older urllib3's metadata ahead of the installed one on the path."""
    fake_dist_info(tmp_path, "urllib3", "1.26.20")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(paths.ROOT)])}
    proc = subprocess.run([sys.executable, "-c", "import agentcore"], capture_output=True,
                          text=True, timeout=60, env=env, cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "ImportError: agentcore needs urllib3>=2.2.1 (installed: 1.26.20); "
        "upgrade it: pip install -U 'urllib3>=2.2.1'")
