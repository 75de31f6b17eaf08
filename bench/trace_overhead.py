#!/usr/bin/env python3
"""Overhead of the simulated-cuda tracer on a small training loop.

MLP 64-128-10, batch 32, 200 steps, SGD, one thread: plain CPU run versus the
same loop with device "cuda" under devlint.trace.simulate.Simulation.
Prints the median time of each and their ratio.

    .venv/bin/python bench/trace_overhead.py [--repeats 7]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn as nn

from devlint.trace.events import Recorder
from devlint.trace.simulate import Simulation


def train(device: str, steps: int = 200) -> float:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(32, 64, device=device)
    y = torch.randint(0, 10, (32,), device=device)
    start = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return time.perf_counter() - start


def simulated() -> float:
    with Simulation(2, Recorder()):
        return train("cuda")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    train("cpu"), simulated()  # warm-up
    plain, sim = [], []
    for _ in range(args.repeats):  # interleaved, so drift hits both alike
        plain.append(train("cpu"))
        sim.append(simulated())
    p, s = statistics.median(plain), statistics.median(sim)
    print(f"plain     {p * 1000:8.1f} ms / 200 steps")
    print(f"simulated {s * 1000:8.1f} ms / 200 steps")
    print(f"ratio     {s / p:8.2f}x")


if __name__ == "__main__":
    main()
