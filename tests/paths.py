"""Where the tests find things: the repository, the package, the examples, the docs and the
fixtures.

Test files live one directory down (`tests/<layer>/`), so they import these instead of
counting parents of their own `__file__`.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
PACKAGE_DIR = ROOT / "agentcore"
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs"
FIXTURES = TESTS / "fixtures"
