"""The project index: module names, imports across files, summaries, and the two-phase run."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from devlint.analysis.project import ProjectIndex, absolute_import, module_name
from devlint.rules import ALL_RULES
from devlint.runner import check_files

DEFAULT = frozenset(rule.code for rule in ALL_RULES if rule.default_enabled)


def write(root: Path, files: dict) -> list:
    paths = []
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        paths.append(path)
    return paths


def check(paths) -> set:
    return {(Path(d.path).name, d.line, d.code) for d in check_files([(str(p), DEFAULT, None) for p in paths], 1)}


def test_module_names_follow_packages(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/models/__init__.py": "", "pkg/models/net.py": "", "train.py": ""})
    assert module_name(str(tmp_path / "train.py")) == (str(tmp_path), "train", False)
    assert module_name(str(tmp_path / "pkg/models/net.py")) == (str(tmp_path), "pkg.models.net", False)
    assert module_name(str(tmp_path / "pkg/models/__init__.py")) == (str(tmp_path), "pkg.models", True)


def test_relative_imports_become_absolute():
    assert absolute_import("pkg.sub.train", False, 1, "models") == "pkg.sub.models"
    assert absolute_import("pkg.sub.train", False, 2, "models") == "pkg.models"
    assert absolute_import("pkg.sub", True, 1, "net") == "pkg.sub.net"
    assert absolute_import("train", False, 3, "x") is None


def test_reexports_and_cycles_resolve_without_looping():
    index = ProjectIndex([
        {"root": "/p", "module": "a", "imports": {"Net": "b.Net", "Loop": "b.Loop"}, "classes": {},
         "functions": {}, "values": {}, "needs": []},
        {"root": "/p", "module": "b", "imports": {"Loop": "a.Loop"},
         "classes": {"Net": {"bases": ["torch.nn.Module"], "module": None, "stateful": True}},
         "functions": {}, "values": {}, "needs": []},
    ])
    assert index.lookup("/p", "a.Net")[0] == "class"
    assert index.is_module_class("/p", "a.Net") is True
    assert index.lookup("/p", "a.Loop") is None  # a -> b -> a: given up, not an endless loop


def test_model_built_in_one_file_and_not_moved_in_another(tmp_path):
    paths = write(tmp_path, {
        "models.py": """\
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 2)

                def forward(self, x):
                    return self.fc(x)

            def build_model():
                return Net()
            """,
        "utils.py": """\
            import torch

            def get_device():
                if torch.cuda.is_available():
                    return torch.device("cuda")
                return torch.device("cpu")
            """,
        "train.py": """\
            import torch
            from models import build_model
            from utils import get_device

            device = get_device()
            model = build_model()
            x = torch.randn(4, 8).to(device)
            out = model(x)
            """,
    })
    assert check(paths) == {("train.py", 8, "DEV101")}
    # Alone, train.py knows neither what build_model returns nor what get_device picks.
    assert check([tmp_path / "train.py"]) == set()


def test_moving_the_model_in_the_other_file_is_silent(tmp_path):
    paths = write(tmp_path, {
        "pkg/__init__.py": "from .models import Net\n",
        "pkg/models.py": """\
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 2)
            """,
        "train.py": """\
            import torch
            from pkg import Net

            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = Net().to(device)
            out = model(torch.randn(4, 8, device=device))
            """,
    })
    assert check(paths) == set()


def test_arguments_and_heat_flow_into_another_file(tmp_path):
    paths = write(tmp_path, {
        "engine.py": """\
            def apply_gradients(opt, loss):
                opt.zero_grad()
                loss.backward()
                opt.step()

            def report(loss):
                return loss.item()
            """,
        "train.py": """\
            import torch
            from torch import nn
            from engine import apply_gradients, report

            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            net = nn.Linear(8, 2).to(device)
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            for i in range(100):
                x = torch.randn(4, 8, device=device)
                y = torch.randint(0, 2, (4,), device=device)
                loss = nn.functional.cross_entropy(net(x), y)
                apply_gradients(opt, loss)
                report(loss)
            """,
    })
    # The loop trains through engine.apply_gradients, so engine.report runs every training step,
    # and it receives a loss on the device: its `.item()` syncs every step.
    assert check(paths) == {("engine.py", 7, "DEV401")}
    # Alone, engine.py knows nothing of its callers.
    assert check([tmp_path / "engine.py"]) == set()


def test_a_second_run_answers_from_the_cache(tmp_path):
    write(tmp_path, {
        "models.py": "import torch.nn as nn\n\nclass Net(nn.Module):\n    pass\n",
        "train.py": "import torch\nfrom models import Net\n\nnet = Net()\nopt = torch.optim.SGD(net.parameters(), lr=1)\n"
                    "net.to(torch.device('cuda' if torch.cuda.is_available() else 'cpu'))\n",
    })

    def run():
        result = subprocess.run([sys.executable, "-m", "devlint", ".", "--output-format", "json"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        return [(d["path"], d["line"], d["code"]) for d in json.loads(result.stdout)]

    first = run()
    assert first == [("train.py", 5, "DEV203")]
    entries = list((tmp_path / ".devlint_cache").rglob("*.json"))
    summaries = [json.loads(e.read_text())["summary"] for e in entries]
    assert any(s and s["module"] == "models" and "Net" in s["classes"] for s in summaries)
    assert run() == first
