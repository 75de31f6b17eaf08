#!/usr/bin/env python3
"""Score devlint on a set of unseen bug programs (see bench/UNSEEN_BRIEF.md for how a set is written).

Usage:
    DEVLINT_CMD="python -m devlint.cli" python bench/score_unseen.py [-v] DIR [DIR ...]

Each DIR holds `bNN_*.py` bug programs (the line the fix changes ends in `# BUG`, the line where
the program fails in `# FAILS`), their `bNN_*_fixed.py` twins (changed lines end in `# FIXED`) and
`okNN_*.py` correct programs. devlint checks each DIR once (`check --output-format json`), and for
each DIR the script prints:

  hit        bug programs with a finding (any severity) on a `# BUG` line
  hit_fail   bug programs with a finding on a `# BUG` or a `# FAILS` line
  cited      bug programs with a hit, or a message that names a `# BUG` line ("line N")
  twin_fp    twins with a finding on a `# FIXED` line
  ok_err     error findings in the correct programs (ok_files_err: programs with one)

Misses, twin findings and correct-program errors are listed (-v lists the hits too).
Stdlib only.
"""

import json
import os
import re
import shlex
import subprocess
import sys

COUNTS = ("bugs", "hit", "hit_fail", "cited", "twins", "twin_fp", "ok", "ok_err", "ok_files_err")


def marked_lines(path: str, tag: str) -> list:
    """Line numbers whose text carries `# TAG` (BUG, FAILS, FIXED)."""
    pattern = re.compile(r"#\s*" + tag + r"\b")
    with open(path, encoding="utf-8") as handle:
        return [number for number, line in enumerate(handle, 1) if pattern.search(line)]


def findings_by_file(command: list, folder: str):
    result = subprocess.run(command + ["check", "--output-format", "json", "--exit-zero", "--no-cache", folder],
                            capture_output=True, text=True)
    try:
        findings = json.loads(result.stdout)
    except ValueError:
        return None, result.stderr[-2000:]
    grouped = {}
    for finding in findings:
        grouped.setdefault(os.path.basename(finding["path"]), []).append(finding)
    return grouped, ""


def score(folder: str, command: list, verbose: bool) -> dict:
    grouped, problem = findings_by_file(command, folder)
    counts = dict.fromkeys(COUNTS, 0)
    if grouped is None:
        print(f"FAILED {folder}: {problem}")
        return counts
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        path, found = os.path.join(folder, name), grouped.get(name, [])
        if name.startswith("ok"):
            errors = [f for f in found if f["severity"] == "error"]
            counts["ok"] += 1
            counts["ok_err"] += len(errors)
            counts["ok_files_err"] += bool(errors)
            for f in errors:
                print(f"  OKERR {path}:{f['line']} {f['code']} {f['message'][:150]}")
        elif name.endswith("_fixed.py"):
            fixed = set(marked_lines(path, "FIXED"))
            wrong = [f for f in found if f["line"] in fixed]
            counts["twins"] += 1
            counts["twin_fp"] += bool(wrong)
            for f in wrong:
                print(f"  TWINFP {path}:{f['line']} {f['code']} {f['message'][:150]}")
        elif name.startswith("b"):
            bug, fails = marked_lines(path, "BUG"), marked_lines(path, "FAILS")
            lines = {f["line"] for f in found}
            hit = bool(lines & set(bug))
            hit_fail = bool(lines & set(bug + fails))
            cited = hit or any(re.search(r"\bline %d\b" % n, f["message"]) for f in found for n in bug)
            counts["bugs"] += 1
            counts["hit"] += hit
            counts["hit_fail"] += hit_fail
            counts["cited"] += cited
            if verbose or not hit:
                tag = "HIT" if hit else "FAIL-LINE" if hit_fail else "CITED" if cited else "MISS"
                got = ", ".join(f"{f['line']}:{f['code']}" for f in found)
                print(f"  {tag} {path} BUG{bug} FAILS{fails} got {got}")
    print(folder, counts)
    return counts


def main(argv: list) -> int:
    verbose = "-v" in argv
    folders = [a for a in argv if a != "-v"]
    if not folders:
        print(__doc__)
        return 2
    missing = [folder for folder in folders if not os.path.isdir(folder)]
    if missing:
        print(f"score_unseen: not a folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    command = shlex.split(os.environ.get("DEVLINT_CMD", "devlint"))
    total = dict.fromkeys(COUNTS, 0)
    for folder in folders:
        for key, value in score(folder, command, verbose).items():
            total[key] += value
    print("TOTAL", total)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
