"""The abstract heap: the fields of objects, one object per allocation site.

A model built by `Net()` on line 12 is one object wherever it is stored: in
`model`, in `self.net` of a trainer, in a list. Its fields (`self.x` set by
its constructor or later by its methods) live here, keyed by the allocation
site (`Value.ident`), so every method and every alias reads the same ones.
A site that allocates many objects (a constructor called in a loop) is still
one abstract object; its fields are then a summary of all of them.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from .env import moved_copy
from .lattice import MODULE, OPTIMIZER, TENSOR, Value, conflicts, join_values


def function_key(function: Optional[object]) -> int:
    """How heap records name the function code runs in: `id` of its node, 0 for module code."""
    return id(function) if function is not None else 0

#: The field under which an object of a `list` subclass keeps what was appended to it.
SEQUENCE_ITEMS = "[]"


class Heap:
    __slots__ = ("_fields", "_holders", "optimizer_state", "_generation", "_built_on", "_classes", "clock", "_renewed_at",
                 "relocations", "made_in", "saved_files", "wrapped", "optimized_tensors", "_state_calls", "journal")

    def __init__(self) -> None:
        self._fields: Dict[int, Dict[str, Value]] = {}
        #: object -> the (object, field) places that may hold it: a move visits those only, so its
        #: cost does not grow with the size of the heap
        self._holders: Dict[int, Set[Tuple[int, str]]] = {}
        #: optimizer (by the node that built it) -> where CPU state was created or loaded into it,
        #: through whichever alias (`self.opt.load_state_dict(...)` in a helper object)
        self.optimizer_state: Dict[int, object] = {}
        #: optimizer -> the calls that led to that load, innermost first, each with the function it
        #: was made in (`id` of its node, 0 for module code): a model moved in one of those functions
        #: is moved too late there, at that call (`resume(model, path, optimizer)` before `.to()`)
        self._state_calls: Dict[int, List[Tuple[int, object]]] = {}
        #: what `torch.save` wrote, by the file it named (a literal path or the expression naming
        #: it, `args.checkpoint`): a later `torch.load` of that file gives back its structure
        self.saved_files: Dict[str, Value] = {}
        #: modules (allocation sites) some DataParallel/DDP wrapper has held: a name for the module
        #: may be the wrapper on some path the values no longer tell apart
        self.wrapped: Set[int] = set()
        #: CPU tensors an optimizer was given itself (`Adam([log_alpha])`), by where each was made
        #: -> the optimizer's construction and class: a `.to()` of one later is a copy the optimizer
        #: never sees
        self.optimized_tensors: Dict[int, Tuple[object, str]] = {}
        #: allocation site -> how many objects it has made so far; optimizer (by the node that built
        #: it) -> the generation of the module it was built on. A site run again (a second
        #: `Trainer(...)`) makes a new object: the first one's optimizer is not the new one's.
        self._generation: Dict[int, int] = {}
        self._built_on: Dict[int, Tuple[int, int]] = {}
        #: allocation site -> the class of this file it instantiates (an object met as "one of
        #: several", a callback in a list, is called through each one's class)
        self._classes: Dict[int, str] = {}
        #: how many objects have been made so far, and when each site last made one: whether an
        #: object is older than some moment (a call) is a comparison
        self.clock = 0
        self._renewed_at: Dict[int, int] = {}
        #: how many stores so far put a tensor or module field on a device apart from where it was
        #: (a metric's `reset()` rebuilding its buffer on the CPU): a loop whose iteration did so
        #: has a second iteration that differs from the first
        self.relocations = 0
        #: allocation site -> the function (by `id` of its node; 0 for module code) that made it: a
        #: function's result made by it is a new object at each of its calls
        self.made_in: Dict[int, int] = {}
        #: while the branches of an `if` run: the stores each made, as (object, field, value before)
        self.journal: Optional[List[Tuple[int, str, Optional[Value]]]] = None

    def note_class(self, ident: int, cls: str) -> None:
        self._classes[ident] = cls

    def class_of(self, ident: int) -> Optional[str]:
        return self._classes.get(ident)

    def renew(self, ident: int, where: Optional[int] = None) -> None:
        """The site `ident` made a new object (in the function `where`)."""
        if where is not None:
            self.made_in[ident] = where
        self._generation[ident] = self._generation.get(ident, 0) + 1
        self.clock += 1
        self._renewed_at[ident] = self.clock

    def made_since(self, ident: int, clock: int) -> bool:
        """Did the site `ident` make a new object after the moment `clock` was read?"""
        return self._renewed_at.get(ident, 0) > clock

    def note_optimizer(self, node: object, module: int) -> None:
        self._built_on[id(node)] = (module, self._generation.get(module, 0))

    def note_state_loads_returned(self, loads_before: int, call: object, function: int, handed: Set[int]) -> None:
        """A call returned: the optimizer state loaded in it (after the first `loads_before` loads)
        was loaded through this call, made in `function`, when the call handed that optimizer over
        (`handed`: the optimizers among its arguments). (A helper object that keeps the optimizer
        itself loads it as its own action, reported where it loads.)"""
        for optimizer in list(self.optimizer_state)[loads_before:]:
            if optimizer in handed:
                self._state_calls.setdefault(optimizer, []).append((function, call))

    def state_loaded_through(self, optimizer: int, function: int) -> Optional[object]:
        """The call made in `function` that led to the optimizer's state load, if one did."""
        return next((call for where, call in self._state_calls.get(optimizer, ()) if where == function), None)

    def built_on_current(self, optimizer: Value, module: int) -> bool:
        """Was `optimizer` built on the object the site `module` made last (not an earlier one)?"""
        built = self._built_on.get(id(optimizer.origin)) if optimizer.origin is not None else None
        return built is None or built[0] != module or built[1] == self._generation.get(module, 0)

    def optimizers_of(self, module: int) -> List[Value]:
        """The optimizers some object's field holds that were built on `module`'s parameters
        (`self.optimizer`, set by a helper method; an agent's `policy_optimizer`)."""
        # (an optimizer carries its module's identity, so the places holding it are indexed there)
        found = []
        for owner, name in self._holders.get(module, ()):
            value = self._fields.get(owner, {}).get(name)
            if value is not None and value.kind == OPTIMIZER and (value.ident == module or module in value.aliases):
                found.append(value)
        return found

    def fields(self, ident: Optional[int]) -> Dict[str, Value]:
        """The known fields of an object (empty when it has none or is not an object)."""
        if ident is None:
            return {}
        return self._fields.get(ident, {})

    def get(self, ident: Optional[int], name: str) -> Optional[Value]:
        return self.fields(ident).get(name)

    def allocate(self, ident: int, fields: Dict[str, Value]) -> None:
        """A new object: its constructor's fields (a later allocation at the same site joins in)."""
        for name, value in fields.items():
            self._index(ident, name, value)
        known = self._fields.get(ident)
        if known is None:
            self._fields[ident] = dict(fields)
            return
        for name in known.keys() | fields.keys():
            left, right = known.get(name), fields.get(name)
            known[name] = join_values(left, right) if left is not None and right is not None else (left or right)

    def copy_object(self, old: int, new: int, where: int) -> None:
        """`new` is another object like `old` (made by another call of the function that made it)."""
        if new not in self._fields:
            self.allocate(new, dict(self.fields(old)))
        if old in self._classes:
            self._classes[new] = self._classes[old]
        self.made_in[new] = where
        self.renew(new)

    def replace_identity(self, ident: int, moved: Value, weak: bool = False) -> None:
        """An object moved in place: the fields that hold it see the move."""
        for owner, name in list(self._holders.get(ident, ())):
            fields = self._fields.get(owner, {})
            value = fields.get(name)
            if value is not None:
                after = moved_copy(value, ident, moved, weak)
                if after is not value:
                    fields[name] = after

    def holders_of(self, ident: Optional[int]) -> List[Tuple[int, str]]:
        """The (object, field) places that hold the object `ident` itself."""
        if ident is None:
            return []
        return [(holder, name) for holder, name in self._holders.get(ident, ())
                if getattr(self._fields.get(holder, {}).get(name), "ident", None) == ident]

    def store(self, ident: int, name: str, value: Value, strong: bool = True) -> None:
        """`obj.name = value`; a weak store (the object is one of several) joins with the old value."""
        fields = self._fields.setdefault(ident, {})
        old = fields.get(name)
        if self.journal is not None:
            self.journal.append((ident, name, old))
        if old is not None and old.kind == value.kind and value.kind in (TENSOR, MODULE) and conflicts(old.device, value.device):
            self.relocations += 1
        fields[name] = value if strong or old is None else join_values(old, value)
        self._index(ident, name, fields[name])

    # --- branches: a field set on both sides of an `if` holds either value after it ---------

    def begin_branch(self) -> Optional[list]:
        """Start recording this branch's stores; returns the enclosing record, for `end_branch`."""
        outer, self.journal = self.journal, []
        return outer

    def end_branch(self, outer: Optional[list]) -> Dict[Tuple[int, str], Tuple[Optional[Value], Optional[Value]]]:
        """Stop recording: each field the branch stored, as (value before the branch, value after),
        and the heap put back as it was before the branch (so the other branch starts from there)."""
        log, self.journal = self.journal or [], outer
        written: Dict[Tuple[int, str], Tuple[Optional[Value], Value]] = {}
        for ident, name, before in log:
            key = (ident, name)
            if key not in written:
                written[key] = (before, self._fields.get(ident, {}).get(name))
        for (ident, name), (before, _) in written.items():
            if before is None:
                self._fields.get(ident, {}).pop(name, None)
            else:
                self._fields.setdefault(ident, {})[name] = before
        return written

    def join_branches(self, sides: Sequence[Dict[Tuple[int, str], Tuple[Optional[Value], Optional[Value]]]],
                      join: Callable[[Value, Value], Value]) -> None:
        """After an `if` whose branches both go on: each field either one stored holds what either
        side left (a side that did not store it left the value from before; a field new on one side
        only is that side's)."""
        for key in set().union(*sides):
            ident, name = key
            before = next(side[key][0] for side in sides if key in side)
            after = [side[key][1] if key in side else before for side in sides]
            present = [value for value in after if value is not None]
            if not present:
                continue  # (a field each side dropped again)
            value = present[0]
            for other in present[1:]:
                value = join(value, other)
            self.store(ident, name, value)

    def _index(self, owner: int, name: str, value: Value) -> None:
        stack, depth = [value], 0
        while stack and depth < 64:  # containers of containers: a bounded look
            current = stack.pop()
            depth += 1
            # (a module's parameters held elsewhere, `EMA(model.named_parameters())`, move with it)
            for ident in (current.ident, *current.aliases, current.owner if current.parameter else None):
                if ident is not None:
                    self._holders.setdefault(ident, set()).add((owner, name))
            stack.extend(current.items)
