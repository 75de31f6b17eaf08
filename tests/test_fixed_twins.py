"""Every fixable fixture has its `.fixed.py` twin, equal byte for byte to what
`devlint --fix --unsafe-fixes` makes of it (`python tests/twins.py` rewrites them)."""
from __future__ import annotations

import pytest

from fixture_support import FIXTURES, fixture_files, project_folders
from twins import fix_fixture, fix_project, twin_path

FIXABLE = [path for path in fixture_files() if twin_path(path).exists()]


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_twin_is_exactly_the_fixed_program(path):
    assert_twin(path, fix_fixture(path))


@pytest.mark.parametrize("folder", project_folders(), ids=lambda p: p.name)
def test_project_twins_are_exactly_the_fixed_programs(folder):
    for path, result in fix_project(folder).items():
        assert_twin(path, result)


def assert_twin(path, result):
    twin = twin_path(path)
    if result.fixed is None:
        assert not twin.exists(), f"{twin.name}: no fix applies to {path.name} any more; run tests/twins.py"
        return
    assert twin.exists(), f"{path.name} is fixable but has no twin; run tests/twins.py and review it"
    assert twin.read_bytes() == result.fixed, f"{twin.name} is not what --fix makes of {path.name}"
    assert not result.problems, result.problems


def test_every_twin_has_its_fixture():
    orphans = [twin.name for twin in FIXTURES.rglob("*.fixed.py")
               if not twin.with_name(twin.name.replace(".fixed.py", ".py")).exists()]
    assert not orphans


def test_a_good_share_of_the_fixtures_is_fixable():
    assert len(FIXABLE) >= 60
