"""The `.fixed.py` twin of a fixture: what `devlint --fix --unsafe-fixes` makes of it.

`python tests/twins.py` rewrites the twins after a deliberate change to a fix;
review the diff (git shows it) before committing. The tests compare byte for byte.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devlint.engine import analyse_text, decode  # noqa: E402
from devlint.fixes.fixer import FileFix, fix_bytes  # noqa: E402
from devlint.runner import fix_files  # noqa: E402

from fixture_support import enabled_for, fixture_files, project_files, project_folders  # noqa: E402


def twin_path(path: Path) -> Path:
    return path.with_name(path.name[: -len(".py")] + ".fixed.py")


def fix_fixture(path: Path, unsafe: bool = True) -> FileFix:
    data = path.read_bytes()
    text, _ = decode(data)
    enabled = enabled_for(text)
    name = str(path)

    def analyse(source: str):
        return analyse_text(source, name, enabled, None)[0]

    return fix_bytes(data, name, analyse(text), analyse, unsafe)


def fix_project(folder: Path) -> Dict[Path, FileFix]:
    """A project fixture fixed as the CLI fixes it: every file, with the project index."""
    files = project_files(folder)
    enabled = frozenset().union(*(enabled_for(path.read_text(encoding="utf-8")) for path in files))
    _, results = fix_files([(str(path), enabled, None) for path in files], processes=1, unsafe=True)
    fixed = {Path(result.path): result for result in results}
    return {path: fixed.get(path, FileFix(str(path), path.read_bytes())) for path in files}


def all_expected_twins() -> Dict[Path, Optional[bytes]]:
    """Every fixture program and its twin's content (None: no fix applies)."""
    expected = {path: fix_fixture(path).fixed for path in fixture_files()}
    for folder in project_folders():
        expected.update({path: result.fixed for path, result in fix_project(folder).items()})
    return expected


def main() -> int:
    written = removed = 0
    for path, content in all_expected_twins().items():
        twin = twin_path(path)
        if content is None:
            if twin.exists():
                twin.unlink()
                removed += 1
            continue
        if not twin.exists() or twin.read_bytes() != content:
            twin.write_bytes(content)
            written += 1
    print(f"{written} twins written, {removed} removed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
