"""The `.fixed.py` twin of a fixture: what `devlint --fix --unsafe-fixes` makes of it.

`python tests/twins.py` rewrites the twins after a deliberate change to a fix;
review the diff (git shows it) before committing. The tests compare byte for byte.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devlint.engine import analyse_text, decode  # noqa: E402
from devlint.fixes.fixer import FileFix, fix_bytes  # noqa: E402

from fixture_support import enabled_for, fixture_files  # noqa: E402


def twin_path(path: Path) -> Path:
    return path.with_name(path.name[: -len(".py")] + ".fixed.py")


def fix_fixture(path: Path, unsafe: bool = True) -> FileFix:
    data = path.read_bytes()
    text, _ = decode(data)
    enabled = enabled_for(text)
    name = str(path)

    def analyse(source: str):
        return analyse_text(source, name, enabled, None)[0]

    return fix_bytes(data, name, analyse(text), analyse, unsafe, decode)


def expected_twin(path: Path) -> Optional[bytes]:
    """The twin's content, or None when no fix applies to the fixture."""
    return fix_fixture(path).fixed


def main() -> int:
    written = removed = 0
    for path in fixture_files():
        twin, content = twin_path(path), expected_twin(path)
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
