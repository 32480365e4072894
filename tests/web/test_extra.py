"""The `web` extra: `agentcore.web` says which extra it needs, and `import agentcore` loads none of
it (the import-time probe of tests/package/test_public_api.py checks the latter too)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _internals import cli

pytestmark = pytest.mark.slow  # each test starts a Python process


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.parametrize("missing", ["ag_ui", "starlette"])
def test_web_without_its_packages_says_which_extra_to_install(missing: str) -> None:
    done = _python(f"""\
        import sys
        sys.modules[{missing!r}] = None
        try:
            import agentcore.web
        except ImportError as exc:
            print(exc)
        """)
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "agentcore.web needs the 'web' extra: pip install 'agentcore[web]'\n", "")


def test_the_web_command_without_the_extra_exits_2_naming_it() -> None:
    done = _python(f"""\
        import sys
        sys.modules["uvicorn"] = None
        from {cli.__name__} import main
        sys.exit(main(["web", "--port", "0"]))
        """)
    assert done.returncode == 2
    assert done.stderr.startswith("python -m agentcore web: error: the web command needs the "
                                  "'web' extra: pip install 'agentcore[web]'")
