"""Every fixture reports exactly its `# expect:` lines, and every other line stays silent."""
from __future__ import annotations

import pytest

from fixture_support import FIXTURES, expectations, fixture_files, mismatch_report


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture(path):
    text = path.read_text(encoding="utf-8")
    problems = mismatch_report(text, str(path.relative_to(FIXTURES)))
    assert not problems, "devlint disagrees with the fixture's expectations:\n" + problems


def test_fixture_corpus_size():
    """The issue's floor: 40 DEV1xx programs, about a third of them silent."""
    files = [p for p in fixture_files() if p.parent.name == "placement"]
    silent = [p for p in files if not expectations(p.read_text(encoding="utf-8"))]
    assert len(files) >= 40
    assert len(silent) * 4 >= len(files)
