"""Every fixture reports exactly its `# expect:` lines, and every other line stays silent."""
from __future__ import annotations

from collections import defaultdict

import pytest

from devlint.runner import check_files
from fixture_support import (
    FIXTURES, compare, enabled_for, expectations, fixture_files, mismatch_report, project_files, project_folders,
)

FAMILIES = ("placement", "parallel", "portability", "hotpath")


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture(path):
    text = path.read_text(encoding="utf-8")
    problems = mismatch_report(text, str(path.relative_to(FIXTURES)))
    assert not problems, "devlint disagrees with the fixture's expectations:\n" + problems


@pytest.mark.parametrize("folder", project_folders(), ids=lambda p: p.name)
def test_project(folder):
    """A folder is checked as one project, as the CLI would: imports between its files resolve."""
    files = project_files(folder)
    texts = {path: path.read_text(encoding="utf-8") for path in files}
    enabled = frozenset().union(*(enabled_for(text) for text in texts.values()))
    found = defaultdict(list)
    for diagnostic in check_files([(str(path), enabled, None) for path in files], processes=1):
        found[diagnostic.path].append(diagnostic)
    problems = [compare(text, str(path.relative_to(FIXTURES)), found[str(path)]) for path, text in texts.items()]
    problems = "\n".join(p for p in problems if p)
    assert not problems, "devlint disagrees with the project's expectations:\n" + problems


def test_each_project_crosses_files():
    """A project fixture is only a project if some file imports another one of it."""
    for folder in project_folders():
        names = {p.stem for p in project_files(folder)} | {p.name for p in folder.iterdir() if p.is_dir()}
        sources = [p.read_text(encoding="utf-8") for p in project_files(folder)]
        assert any(f"from {name}" in s or f"import {name}" in s or "from ." in s for s in sources for name in names), folder


@pytest.mark.parametrize("family", FAMILIES)
def test_fixture_corpus_size(family):
    """Each family has its programs, and about a third of them are correct code that must stay silent."""
    files = [p for p in fixture_files() if p.parent.name == family]
    silent = [p for p in files if not expectations(p.read_text(encoding="utf-8"))]
    assert len(files) >= 24
    assert len(silent) * 4 >= len(files)


def test_new_families_have_eighty_programs_a_third_negative():
    files = [p for p in fixture_files() if p.parent.name in FAMILIES[1:]] + project_folders()
    silent = [p for p in files if not any(expectations(f.read_text(encoding="utf-8"))
                                          for f in ([p] if p.is_file() else project_files(p)))]
    assert len(files) >= 80
    assert len(silent) * 3 >= len(files)
