"""Properties of `--fix` over fixtures and generated programs.

For any program: the fixed text parses, fixing it again changes nothing, and a
program devlint reports nothing for is never changed.  The generated programs
come from hypothesmith (arbitrary Python from the grammar, with a buggy
PyTorch snippet appended so that fixes happen) and from a small grammar of
PyTorch statements below (models, moves, optimizers, loaders, loops, classes),
which exercises fixes that meet each other.  Examples are derandomised so a
CI failure reproduces; DEVLINT_PROPERTY_EXAMPLES scales them up locally.
"""
from __future__ import annotations

import os
import warnings

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devlint.engine import analyse_text
from devlint.fixes.apply import parses, python_parses
from devlint.fixes.fixer import fix_text
from devlint.rules import ALL_RULES

from fixture_support import PROJECTS, FIXTURES, enabled_for

ALL_CODES = frozenset(rule.code for rule in ALL_RULES)
#: Per test function; four functions run these in parallel under xdist.
EXAMPLES = int(os.environ.get("DEVLINT_PROPERTY_EXAMPLES", "260"))
PROPERTY_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                             suppress_health_check=list(HealthCheck))
SNIPPETS = [snippet for rule in ALL_RULES for snippet in rule.invalid]


def fixed(text: str, enabled=ALL_CODES) -> tuple:
    def analyse(source: str):
        return analyse_text(source, "generated.py", enabled, None)[0]

    found = analyse(text)
    new_text, applied, _, _ = fix_text(text, found, analyse, unsafe=True)
    return found, new_text, applied


def assert_fix_properties(text: str, enabled=ALL_CODES) -> int:
    """Checks the three properties; returns how many fixes applied."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found, once, applied = fixed(text, enabled)
        if not found:
            assert once == text, "a file without findings was changed"
        if once != text:
            assert parses(once, python_parses(text)), f"the fixed program does not parse:\n{once}"
        _, twice, again = fixed(once, enabled)
    assert twice == once, f"a second --fix changed the program again ({[d.code for d in again]}):\n{once}"
    return len(applied)


# --- every fixture -------------------------------------------------------------------------

def _all_fixture_programs():
    return sorted(p for p in FIXTURES.rglob("*.py") if not p.name.endswith(".fixed.py"))


@pytest.mark.parametrize("path", _all_fixture_programs(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fix_properties_hold_on_every_fixture(path):
    text = path.read_text(encoding="utf-8")
    assert_fix_properties(text, enabled_for(text) if PROJECTS not in path.parents else ALL_CODES)


# --- arbitrary Python from the grammar, plus a bug ---------------------------------------------

@PROPERTY_SETTINGS
@given(program=hypothesmith.from_grammar(), snippet=st.sampled_from(SNIPPETS))
def test_fix_properties_hold_on_grammar_programs_with_a_bug(program, snippet):
    assert_fix_properties(program.rstrip("\\\n") + "\n" + snippet if program.strip() else snippet)


@PROPERTY_SETTINGS
@given(program=hypothesmith.from_grammar())
def test_grammar_programs_without_findings_stay_untouched(program):
    assert_fix_properties(program)


# --- programs from a grammar of PyTorch statements ---------------------------------------------

_SIMPLE = [
    'dev = torch.device("cuda")', 'dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    'dev = "cuda"', "m = nn.Linear(4, 4)", "m.to(dev)", "m = m.cuda()", "m = m.to(dev)",
    "m = nn.DataParallel(m)", "opt = torch.optim.SGD(m.parameters(), lr=0.1)",
    "opt = torch.optim.Adagrad(m.parameters())", "x = torch.randn(2, 4)", "x.to(dev)", "x = x.to(dev)",
    "x = x.cuda()", "y = m(x)", "z = x + y", "w = torch.zeros(4).to(dev)", "w = torch.randn(4).to(dev)",
    "print(y.numpy())", "v = np.array(y)", 's = torch.load("p.pt")', 'm.load_state_dict(torch.load("p.pt"))',
    "loss = y.sum()", "loss.backward()", "opt.step()", "total = loss.item()",
    "loader = DataLoader(ds, batch_size=2)", "if torch.cuda.is_available:\n    pass",
    "blocks = [nn.Linear(2, 2) for _ in range(2)]", "mask = torch.ones(2, 4)", "z = y * mask",
    "x, label = batch", "out = m(x.to(dev))", "err = nn.functional.cross_entropy(out, label)",
]
_HEADERS = [
    "import torch\nfrom torch import nn\nimport numpy as np\nfrom torch.utils.data import DataLoader\n",
    '"""A generated program."""\nfrom __future__ import annotations\nfrom torch import nn\nimport numpy as np\n',
    "import torch as th\nimport torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\nnp = None\n",
]


def _indent(lines, unit):
    return [unit + line for line in lines]


def _blocks(children):
    """Compound statements around a list of statements (each a list of lines)."""
    body = st.lists(children, min_size=1, max_size=4).map(lambda items: [line for item in items for line in item])
    return st.one_of(
        body.map(lambda lines: ["for batch in loader:"] + _indent(lines, "\t")),
        body.map(lambda lines: ["for _ in range(3):"] + _indent(lines, "\t")),
        body.map(lambda lines: ["if flag:"] + _indent(lines, "\t")),
        body.map(lambda lines: ["def step(x, m, dev):"] + _indent(lines, "\t")),
        body.map(lambda lines: ["class Net(nn.Module):", "\tdef __init__(self):", "\t\tsuper().__init__()",
                                "\t\tself.w = torch.ones(3)", "\t\tself.blocks = [nn.Linear(2, 2)]",
                                "\tdef forward(self, x):"] + _indent(lines, "\t\t") + ["\t\treturn x * self.w"]),
    )


_STATEMENT = st.recursive(st.sampled_from(_SIMPLE).map(lambda s: s.replace("    ", "\t").split("\n")),
                          _blocks, max_leaves=12)


_PRELUDES = [
    "",
    'dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nm = nn.Linear(4, 4).to(dev)\n'
    "x = torch.randn(2, 4)\ny = m(x.to(dev))\nloader = DataLoader(ds, batch_size=2)\n"
    "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n",
]


@st.composite
def torch_programs(draw):
    header = draw(st.sampled_from(_HEADERS)) + draw(st.sampled_from(_PRELUDES))
    lines = [line for item in draw(st.lists(_STATEMENT, min_size=1, max_size=8)) for line in item]
    if draw(st.booleans()):
        lines = [line.replace("\t", "    ") for line in lines]
    text = header + "\n".join(lines) + "\n"
    if draw(st.booleans()):
        text = text.rstrip("\n")
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


@PROPERTY_SETTINGS
@given(program=torch_programs())
def test_fix_properties_hold_on_generated_torch_programs(program):
    assert_fix_properties(program)


@PROPERTY_SETTINGS
@given(program=torch_programs(), seed=st.integers(0, 3))
def test_fixes_with_one_rule_family_selected(program, seed):
    family = ("DEV1", "DEV2", "DEV3", "DEV4")[seed]
    assert_fix_properties(program, frozenset(code for code in ALL_CODES if code.startswith(family)))
