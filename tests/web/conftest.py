"""Fixtures of the web tests: the official JavaScript clients, installed once (`tests/web/js`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

JS = Path(__file__).parent / "js"


@pytest.fixture(scope="session")
def js_clients() -> Path:
    """`tests/web/js`, with its pinned packages installed (`npm ci` when `node_modules` is
    missing). Without node, the test is skipped, except in CI (`CI` set), where it fails."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("CI"):
            pytest.fail("node and npm are needed for the JavaScript client tests")
        pytest.skip("node and npm are not installed")
    if not (JS / "node_modules").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=JS,
                       check=True, timeout=600, capture_output=True)
    return JS
