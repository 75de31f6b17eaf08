"""The abstract state at one program point: names and attribute paths to values."""
from __future__ import annotations

from typing import Dict, Iterable, Optional

from dataclasses import replace

from .lattice import CPU, LIST, OPTIMIZER, TUPLE, UNKNOWN, UNKNOWN_VALUE, CurrentGpu, Device, Value, join_values


class Env:
    """Maps local names and dotted paths (``self.fc``, ``args.device``) to values.

    ``dead`` marks a state after ``return``/``raise``: it joins as nothing.
    """

    __slots__ = ("values", "default_device", "dead", "guarded", "path", "current_gpu")

    def __init__(self, values: Optional[Dict[str, Value]] = None, default_device: Device = CPU,
                 dead: bool = False, guarded: bool = False, path: str = "", current_gpu: Optional[CurrentGpu] = None) -> None:
        self.values: Dict[str, Value] = dict(values) if values else {}
        self.default_device = default_device
        self.dead = dead
        self.guarded = guarded  # an accelerator-availability check has been seen on this path
        self.path = path        # ACCELERATOR_PATH / HOST_PATH inside the branches of an availability test
        #: the GPU a bare `.cuda()` lands on (`torch.cuda.set_device(N)`); None: not known
        self.current_gpu = current_gpu

    def copy(self) -> "Env":
        return Env(self.values, self.default_device, self.dead, self.guarded, self.path, self.current_gpu)

    def take(self, other: "Env") -> "Env":
        """Become `other`, keeping this object: outer scopes hold on to it."""
        self.values = other.values
        self.default_device = other.default_device
        self.dead = other.dead
        self.guarded = other.guarded
        self.path = other.path
        self.current_gpu = other.current_gpu
        return self

    def get(self, key: str) -> Optional[Value]:
        return self.values.get(key)

    def bind(self, key: str, value: Value) -> None:
        """Bind `key`, forgetting what was known about the old object's attributes."""
        if key in self.values and any("." in k for k in self.values):
            prefix = key + "."
            for stale in [k for k in self.values if k.startswith(prefix)]:
                del self.values[stale]
        self.values[key] = value

    def replace_identity(self, ident: int, moved: Value, weak: bool = False) -> None:
        """An in-place move: every name bound to the same object sees it, in containers too. A weak
        move (the object may or may not be the one moved) leaves it where either would be."""
        for key, value in list(self.values.items()):
            after = moved_copy(value, ident, moved, weak)
            if after is not value:
                self.values[key] = after

    def set_fields(self, ident: int, fields: Dict[str, Value]) -> None:
        """A callee set these fields of the object `ident`: every `name.field` path of a name bound
        to it reads the new value (deeper paths, `name.field.x`, are stale and go). The other fields
        keep what this state knew of them, so joins with other paths still see them."""
        owners = [key for key, value in self.values.items() if value.ident == ident and "." not in key]
        for owner in owners:
            for field, value in fields.items():
                prefix = f"{owner}.{field}."
                for stale in [k for k in self.values if k.startswith(prefix)]:
                    del self.values[stale]
                self.values[f"{owner}.{field}"] = value

    def keys(self) -> Iterable[str]:
        return self.values.keys()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Env) and self.values == other.values and self.dead == other.dead
                and self.default_device == other.default_device and self.guarded == other.guarded
                and self.current_gpu == other.current_gpu)

    __hash__ = None  # type: ignore[assignment]


def moved_copy(value: Value, ident: int, moved: Value, weak: bool = False) -> Value:
    """`value` with the object `ident` (itself or an item) moved where `moved` is; `value` itself
    when it does not hold that object."""
    if value.ident == ident and value.kind != OPTIMIZER:  # (an optimizer stays where its module was when built)
        # (both sides of a split hold the object; a part replaced on the CPU, `base.fc = nn.Linear(...)`
        # through `base = model.module if wrapped else model`, is left behind on each)
        sides = tuple(moved_copy(side, ident, moved) for side in value.alternatives)
        after = value.with_device(moved.device, moved.origin, stray=moved.stray, alternatives=sides)
        return join_values(value, after) if weak else after
    if value.parameter and value.owner == ident and moved.device != value.device:
        # `params = model.parameters()` before `model.to(device)`: the parameters moved with it
        after = value.with_device(moved.device, moved.origin, parameter=True, owner=ident)
        return join_values(value, after) if weak else after
    if value.items and value.kind in (LIST, TUPLE):
        items = tuple(moved_copy(item, ident, moved, weak) for item in value.items)
        if any(new is not old for new, old in zip(items, value.items)):
            return replace(value, items=items)
    return value


def join_envs(a: Env, b: Env, availability_split: bool = False, accelerated: Optional[int] = None) -> Env:
    if a.dead:
        return b.copy()
    if b.dead:
        return a.copy()
    # A field set on one path only is, on the other, whatever the object held, which this state
    # does not say. A name bound on one path only (in a loop's body, in one branch) is what that
    # path bound: a use after the join that does not raise NameError sees it.
    ours, theirs = a.values, b.values
    joined: Dict[str, Value] = {}
    for key, left in ours.items():
        right = theirs.get(key)
        if right is left:  # (most names: the same value on both paths, as the branch copied them)
            joined[key] = left
        elif right is None:
            joined[key] = UNKNOWN_VALUE if "." in key else left
        else:
            joined[key] = join_values(left, right, availability_split, accelerated)
    for key, right in theirs.items():
        if key not in ours:
            joined[key] = UNKNOWN_VALUE if "." in key else right
    default = a.default_device if a.default_device == b.default_device else UNKNOWN
    # (`if use_cuda: torch.cuda.set_device(1)`: on a machine with the GPUs, that side ran)
    gpu = a.current_gpu if a.current_gpu == b.current_gpu else (
        (a.current_gpu if a.current_gpu is not None else b.current_gpu) if availability_split else None)
    return Env(joined, default, False, a.guarded and b.guarded, a.path if a.path == b.path else "", gpu)
