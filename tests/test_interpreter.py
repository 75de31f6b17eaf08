"""The interpreter: what it believes about values after straight-line code, branches and loops."""
from __future__ import annotations

import textwrap

import libcst as cst

from devlint.analysis.lattice import CPU, SELECTED, UNKNOWN, Device, symbolic
from devlint.analysis.program import Program


def state(source: str):
    source = textwrap.dedent(source)
    program = Program(cst.parse_module(source), source)
    program.run()
    return program.module_env, program


def device_of(source: str, name: str) -> Device:
    env, _ = state(source)
    return env.get(name).device


def test_ternary_on_availability_is_selected():
    assert device_of("""
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    """, "device") == Device(SELECTED)


def test_if_else_on_availability_joins_to_selected():
    assert device_of("""
        import torch
        if torch.cuda.is_available():
            device = "cuda"
        else:
            device = "cpu"
    """, "device") == Device(SELECTED)


def test_unguarded_cuda_literal():
    assert device_of("import torch\nd = torch.device('cuda:1')\n", "d") == Device("unguarded", 1)


def test_module_moves_in_place_and_aliases_follow():
    env, _ = state("""
        import torch
        from torch import nn
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(2, 2)
        alias = model
        model.to(device)
    """)
    assert env.get("model").device == Device(SELECTED)
    assert env.get("alias").device == Device(SELECTED)


def test_tensor_to_returns_a_new_tensor():
    env, program = state("""
        import torch
        x = torch.zeros(3)
        x.to("cuda")
        y = x.cuda()
    """)
    assert env.get("x").device == CPU
    assert env.get("y").device.is_accelerator
    assert len(program.facts.discarded_moves) == 1


def test_unknown_device_variable_is_symbolic_and_dtype_is_no_move():
    env, _ = state("""
        import torch
        def f(x, device, dtype):
            return x
        a = torch.zeros(3).to(args.device)
        b = torch.zeros(3).to(torch.float16)
    """)
    assert env.get("a").device == symbolic("args.device")
    assert env.get("b").device == CPU


def test_loop_reaches_a_fixpoint_and_branches_disagreeing_become_unknown():
    env, _ = state("""
        import torch
        x = torch.zeros(3)
        for step in range(10):
            if step % 2:
                x = x.cuda()
    """)
    assert env.get("x").device == UNKNOWN


def test_default_device_and_device_context():
    env, _ = state("""
        import torch
        with torch.device("meta"):
            a = torch.zeros(3)
        b = torch.zeros(3)
        torch.set_default_device("cuda:1")
        c = torch.ones(2)
    """)
    assert env.get("a").device == Device("meta")
    assert env.get("b").device == CPU
    assert env.get("c").device == Device("unguarded", 1)


def test_function_summary_substitutes_the_argument_device():
    env, _ = state("""
        import torch
        from torch import nn
        def build(device):
            return nn.Linear(2, 2).to(device)
        def pick():
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = build(pick())
    """)
    assert env.get("model").device == Device(SELECTED)


def test_self_attributes_from_init_follow_the_module_in_forward():
    _, program = state("""
        import torch
        from torch import nn
        class Base(nn.Module):
            pass
        class Net(Base):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
            def forward(self, x):
                return self.fc(x) + torch.ones(2)
        model = Net().to("cuda")
    """)
    (mismatch,) = program.facts.mismatches
    assert mismatch.anchor.value.device == symbolic("self")
    assert mismatch.offender.value.device == CPU


def test_cpu_only_file_does_not_assume_an_accelerator():
    _, program = state("""
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
            def forward(self, x):
                return self.fc(x) + torch.ones(2)
    """)
    assert not program.facts
