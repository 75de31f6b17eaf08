"""The order a file's functions get their generic run in: callers before callees.

A function that some call of the file interprets in context takes its facts
from there, and its generic run (symbolic parameters) stays silent. That only
holds if the callers ran first: a helper defined above its only caller would
otherwise be run generically, recording, before the call that binds its
arguments (a `run(model, loader)` whose loader's labels the caller put on the
GPU). The order is a topological one over the calls the bodies make by name;
ties and cycles keep source order.
"""
from __future__ import annotations

import heapq
from typing import Callable, Dict, Iterable, List, Sequence, Set, Tuple, TypeVar

import libcst as cst

from .names import walk

T = TypeVar("T")
#: A name that many functions share (`forward` in every class of a large file) orders nothing:
#: its calls add no edges, so the work stays linear in the size of the file.
MAX_SAME_NAME = 8


def callers_first(items: Sequence[T], node_of: Callable[[T], cst.FunctionDef],
                  callee_names: Callable[[cst.Call], Iterable[str]],
                  calls_of: Callable[[T], Iterable[cst.Call]]) -> List[T]:
    """`items` reordered so each comes after the items whose bodies call it.

    `callee_names(call)` gives the names a call may reach (`helper` for `helper(x)`,
    `step` for `self.step(x)`); an item is called when one of them is its function's name.
    `calls_of(item)` gives the calls of its function's body (`FunctionInfo.calls`).
    """
    by_name: Dict[str, List[int]] = {}
    for index, item in enumerate(items):
        by_name.setdefault(node_of(item).name.value, []).append(index)
    callers: List[Set[int]] = [set() for _ in items]
    for index, item in enumerate(items):
        for call in calls_of(item):
            for name in callee_names(call):
                candidates = by_name.get(name, ())
                if len(candidates) > MAX_SAME_NAME:
                    continue
                for callee in candidates:
                    if callee != index:
                        callers[callee].add(index)
    # Kahn's algorithm, the earliest ready item first; on a cycle, the earliest unplaced one.
    waiting = [len(c) for c in callers]
    callees: List[List[int]] = [[] for _ in items]
    for callee, those in enumerate(callers):
        for caller in those:
            callees[caller].append(callee)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    placed = [False] * len(items)
    order: List[int] = []
    next_unplaced = 0
    while len(order) < len(items):
        if ready:
            chosen = heapq.heappop(ready)
            if placed[chosen]:
                continue
        else:
            while placed[next_unplaced]:
                next_unplaced += 1
            chosen = next_unplaced
        placed[chosen] = True
        order.append(chosen)
        for callee in callees[chosen]:
            waiting[callee] -= 1
            if waiting[callee] == 0 and not placed[callee]:
                heapq.heappush(ready, callee)
    return [items[i] for i in order]


def calls_in(node: cst.CSTNode):
    """Every call in a function body (nested functions included: they may run too)."""
    return (current for current in walk(node) if type(current) is cst.Call)
