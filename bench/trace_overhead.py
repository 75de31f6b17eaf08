#!/usr/bin/env python3
"""Overhead of `devlint trace` on small training loops, on a CPU machine.

For each model, the same training loop (SGD, cross-entropy, fixed batch, one
thread) is timed three ways:

- plain:      device "cpu", no tracer;
- simulated:  device "cuda" under devlint.trace.simulate.Simulation (what
              `devlint trace` does on a machine without a GPU);
- tracing:    device "cpu" under devlint.trace.realgpu.RealTracing (the
              real-GPU mode, recording without simulating: on a CPU build
              this is the cost of the tracing layer alone).

Only the loop is timed (model and batch are built before the clock starts).
Each way gets warm-up runs, then `--repeats` timed runs, taken in turns with
the order rotated each round so drift hits all three alike; the table shows
medians and the ratios to plain.

    .venv/bin/python bench/trace_overhead.py                  # all models, about 75 s
    .venv/bin/python bench/trace_overhead.py --models mlp --repeats 15 --check-targets
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn

from devlint.trace.events import Recorder
from devlint.trace.realgpu import RealTracing
from devlint.trace.simulate import Simulation


@dataclass
class Case:
    name: str
    describe: str
    steps: int
    target: float  # the simulated/plain ratio the tracer should stay under
    build: Callable[[], tuple[nn.Module, torch.Tensor, torch.Tensor]]


def _mlp():
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    return model, torch.randn(32, 64), torch.randint(0, 10, (32,))


def _cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    return model, torch.randn(32, 3, 64, 64), torch.randint(0, 10, (32,))


class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


def _transformer():
    return _Encoder(), torch.randn(16, 128, 256), torch.randint(0, 10, (16,))


CASES = {
    "mlp": Case("mlp", "MLP 64-128-10, batch 32", 200, 2.5, _mlp),
    "cnn": Case("cnn", "CNN 3 conv+BN, 3x64x64, batch 32", 15, 1.5, _cnn),
    "transformer": Case("transformer", "encoder 2 layers, d256 h4, seq 128, batch 16", 4, 1.5,
                        _transformer),
}


CLOCK = time.perf_counter


def loop(case: Case, device: str, steps: int) -> float:
    torch.manual_seed(0)
    model, x, y = case.build()
    model.to(device)
    x, y = x.to(device), y.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = CLOCK()
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return CLOCK() - start


def plain(case: Case, steps: int) -> float:
    return loop(case, "cpu", steps)


def simulated(case: Case, steps: int) -> float:
    with Simulation(2, Recorder()):
        return loop(case, "cuda", steps)


def tracing_only(case: Case, steps: int) -> float:
    with RealTracing(Recorder()):
        return loop(case, "cpu", steps)


WAYS = (("plain", plain), ("simulated", simulated), ("tracing", tracing_only))


def measure(case: Case, steps: int, repeats: int, warmup: int) -> dict[str, float]:
    for _ in range(warmup):  # first calls pay for lazy imports and allocator growth
        for _, run in WAYS:
            run(case, steps)
    times: dict[str, list[float]] = {name: [] for name, _ in WAYS}
    for r in range(repeats):
        order = WAYS[r % 3:] + WAYS[:r % 3]
        for name, run in order:
            times[name].append(run(case, steps))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(CASES),
                        help=f"comma-separated, from {','.join(CASES)} (default: all)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs of each way first")
    parser.add_argument("--steps", type=int, default=None, help="override every model's step count")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: this process's CPU time, steadier when other jobs share the machine")
    parser.add_argument("--check-targets", action="store_true",
                        help="exit 1 when a simulated ratio is over its target")
    args = parser.parse_args()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}")
    torch.set_num_threads(1)  # one thread: ratios do not depend on the core count
    global CLOCK
    CLOCK = time.perf_counter if args.clock == "wall" else time.process_time

    print(f"torch {torch.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()}, 1 thread, {args.clock} clock, {args.repeats} repeats, medians", file=sys.stderr)
    print("| model | steps | plain s | simulated s | ratio | target | tracing-only s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    missed = []
    for name in names:
        case = CASES[name]
        steps = args.steps or case.steps
        m = measure(case, steps, args.repeats, args.warmup)
        sim_ratio, trace_ratio = m["simulated"] / m["plain"], m["tracing"] / m["plain"]
        if sim_ratio > case.target:
            missed.append(name)
        print(f"| {case.name} ({case.describe}) | {steps} | {m['plain']:.3f} | {m['simulated']:.3f} | "
              f"{sim_ratio:.2f}x | <= {case.target}x | {m['tracing']:.3f} | {trace_ratio:.2f}x |",
              flush=True)
    if missed:
        print(f"over target: {', '.join(missed)}", file=sys.stderr)
    return 1 if missed and args.check_targets else 0


if __name__ == "__main__":
    sys.exit(main())
