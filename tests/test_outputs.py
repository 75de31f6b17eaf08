"""Report formats beyond text and JSON: SARIF, GitHub annotations, --output-file, docs/rules.md."""
from __future__ import annotations

import copy
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

import jsonschema
import pytest

from devlint.docs import rules_markdown
from devlint.rules import ALL_RULES, RULES_BY_CODE

ROOT = Path(__file__).resolve().parent.parent
BUGGY = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(3)
x.to(device)
y = torch.randn(3, device=device)
print(y.numpy(), "100%, done")
"""

# The parts of SARIF 2.1.0 that devlint writes, with the constraints the OASIS specification
# puts on them (required properties, 1-based lines and columns, the level and columnKind values).


def _object(required, **properties):
    return {"type": "object", "required": list(required), "properties": properties}


def _array(items, min_items=0):
    return {"type": "array", "minItems": min_items, "items": items}


_MESSAGE = _object(["text"], text={"type": "string"})
_REGION = _object(["startLine", "startColumn", "endLine", "endColumn"],
                  **{key: {"type": "integer", "minimum": 1} for key in ("startLine", "startColumn", "endLine", "endColumn")})
_ARTIFACT = _object(["uri"], uri={"type": "string", "format": "uri-reference"}, uriBaseId={"type": "string"})
_LEVEL = {"enum": ["none", "note", "warning", "error"]}
_RULE = _object(["id", "shortDescription", "help", "defaultConfiguration"],
                id={"type": "string"}, shortDescription=_MESSAGE, fullDescription=_MESSAGE,
                help=_object(["text"], text={"type": "string"}, markdown={"type": "string"}),
                defaultConfiguration=_object([], level=_LEVEL, enabled={"type": "boolean"}))
_REPLACEMENT = _object(["deletedRegion"], deletedRegion=_REGION, insertedContent=_MESSAGE)
_FIX = _object(["artifactChanges"], description=_MESSAGE, artifactChanges=_array(
    _object(["artifactLocation", "replacements"], artifactLocation=_ARTIFACT, replacements=_array(_REPLACEMENT, 1)), 1))
_RESULT = _object(["ruleId", "message", "locations"],
                  ruleId={"type": "string"}, level=_LEVEL, message=_MESSAGE, ruleIndex={"type": "integer", "minimum": 0},
                  locations=_array(_object(["physicalLocation"], physicalLocation=_object(
                      ["artifactLocation", "region"], artifactLocation=_ARTIFACT, region=_REGION)), 1),
                  fixes=_array(_FIX))
_RUN = _object(["tool", "results"], columnKind={"enum": ["utf16CodeUnits", "unicodeCodePoints"]},
               tool=_object(["driver"], driver=_object(["name", "rules"], name={"type": "string"}, rules=_array(_RULE))),
               results=_array(_RESULT))
SARIF_SUBSET = _object(["version", "runs"], version={"const": "2.1.0"}, runs=_array(_RUN, 1))


# The official SARIF 2.1.0 (RTM.5) schema, as Microsoft publishes it in an npm package (MIT). It is
# fetched when the tests run, pinned by checksum, rather than copied into this repository.
SCHEMA_PACKAGE = "https://registry.npmjs.org/@microsoft/sarif-matcher-utils/-/sarif-matcher-utils-1.0.0-beta.0.tgz"
SCHEMA_SHA1 = "92b53ca3b0f9f8c4417be17c16296781049f3b4e"
SCHEMA_MEMBER = "package/lib/schemas/sarif-2.1.0-rtm.5.json"


@pytest.fixture(scope="session")
def official_sarif_schema(tmp_path_factory):
    try:
        with urllib.request.urlopen(SCHEMA_PACKAGE, timeout=60) as response:
            package = response.read()
    except OSError as error:
        pytest.fail(f"cannot fetch the SARIF schema from the npm registry ({error}); this test needs network access")
    assert hashlib.sha1(package).hexdigest() == SCHEMA_SHA1, "the npm package holding the SARIF schema changed"
    with tarfile.open(fileobj=io.BytesIO(package), mode="r:gz") as archive:
        return json.load(archive.extractfile(SCHEMA_MEMBER))


def devlint(*args, cwd):
    return subprocess.run([sys.executable, "-m", "devlint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "buggy.py").write_text(BUGGY)
    return tmp_path


def test_sarif_output_is_valid_and_carries_rules_results_and_fixes(project):
    result = devlint("--output-format", "sarif", "--no-cache", "buggy.py", cwd=project)
    assert result.returncode == 1
    log = json.loads(result.stdout)
    jsonschema.validate(log, SARIF_SUBSET, format_checker=jsonschema.FormatChecker())
    broken = copy.deepcopy(log)
    broken["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startColumn"] = 0
    with pytest.raises(jsonschema.ValidationError):  # the schema does hold devlint to SARIF's 1-based columns
        jsonschema.validate(broken, SARIF_SUBSET)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [rule.code for rule in ALL_RULES]
    assert rules[[r["id"] for r in rules].index("DEV104")]["help"]["markdown"] == RULES_BY_CODE["DEV104"].documentation()
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert set(by_rule) == {"DEV104", "DEV106"}
    moved = by_rule["DEV104"]
    assert rules[moved["ruleIndex"]]["id"] == "DEV104"
    assert moved["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "buggy.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 4, "startColumn": 1, "endLine": 4, "endColumn": 13}}
    assert moved["fixes"][0]["artifactChanges"][0]["replacements"] == [{
        "deletedRegion": {"startLine": 4, "startColumn": 1, "endLine": 4, "endColumn": 1},
        "insertedContent": {"text": "x = "}}]


@pytest.mark.network
def test_sarif_output_validates_against_the_official_schema(project, official_sarif_schema):
    assert official_sarif_schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    log = json.loads(devlint("--output-format", "sarif", "--no-cache", "buggy.py", cwd=project).stdout)
    validator = jsonschema.validators.validator_for(official_sarif_schema)(official_sarif_schema)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(log)]
    assert not errors, errors
    broken = copy.deepcopy(log)
    broken["runs"][0]["results"][0]["level"] = "fatal"
    assert list(validator.iter_errors(broken)), "the schema should reject an unknown level"


def test_github_annotations_escape_their_text(project):
    result = devlint("--output-format", "github", "--no-cache", "buggy.py", cwd=project)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("::error file=buggy.py,line=4,col=1,endLine=4,endColumn=13,"
                               "title=DEV104 (discarded-tensor-move)::DEV104 the result of")
    assert len(lines) == 2 and result.returncode == 1


def test_output_file_takes_the_report(project):
    result = devlint("--output-format", "json", "--output-file", "report.json", "--no-cache", "buggy.py", cwd=project)
    assert result.stdout == "" and result.returncode == 1
    assert {d["code"] for d in json.loads((project / "report.json").read_text())} == {"DEV104", "DEV106"}
    unwritable = devlint("--output-file", "missing/dir/report.txt", "--no-cache", "buggy.py", cwd=project)
    assert unwritable.returncode == 2 and "cannot write" in unwritable.stderr and "Traceback" not in unwritable.stderr


def test_docs_rules_md_is_generated_from_the_rules():
    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == rules_markdown(), "docs/rules.md is out of date: run `devlint rules --output-format markdown > docs/rules.md`"
    for rule in ALL_RULES:
        assert rule.documentation() in committed


def test_explain_prints_the_rules_section_of_the_docs():
    result = devlint("explain", "DEV402", cwd=ROOT)
    assert result.stdout == RULES_BY_CODE["DEV402"].documentation()
    assert result.stdout in (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
