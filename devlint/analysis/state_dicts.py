"""State dicts and the checkpoint files that hold them: whose parameter names they carry.

A DataParallel/DDP wrapper holds the model as its `module`, so its `state_dict()` names every
tensor `module.<name>`. A strict `load_state_dict` of such a dict into the bare model, or of the
bare model's dict into a wrapper, fails with missing and unexpected keys. What a state dict's
names carry is known where the analysis saw its `state_dict()` call, directly or through a
`torch.save` and a `torch.load` of the same file; anywhere else it is unknown, and silent.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from .facts import Operand, StateDictPrefixMismatch
from .heap import Heap
from .lattice import BATCH, MODULE, PATH, STATE_DICT, Value, literal_of
from .names import dotted_name


def state_dict_of(module: Value, node: cst.Call, heap: Heap, shaped: bool) -> Value:
    """What `module.state_dict()` gives: its tensors, where it is (shaped: the weights of `torch.nn`
    layers, when the file writes no 0-dim `Parameter` of its own), by names that are prefixed when
    the module is a wrapper on some path, the module's own when it is surely bare, and unknown when
    the module may be a wrapper whose trace a join lost."""
    plain = Value(kind=BATCH, device=module.device, origin=node, scalar=False if shaped and module.cls else None)
    wrap = _wrap_of(module)
    if wrap is not None:
        return replace(plain, cls=STATE_DICT, prefixed_by=wrap)
    return replace(plain, cls=STATE_DICT) if _surely_bare(module, heap) else plain


def reloaded(saved: Value, loaded: Value) -> Value:
    """`torch.load` of a file this code saved: the loaded object (on the device the load gives) has
    the saved one's state dicts, at the top or under the literal keys of a checkpoint dict."""
    if saved.cls == STATE_DICT:
        return replace(loaded, cls=STATE_DICT, prefixed_by=saved.prefixed_by)
    entries = tuple((key, replace(loaded, cls=STATE_DICT, prefixed_by=value.prefixed_by))
                    for key, value in saved.keyed if value.cls == STATE_DICT)
    return replace(loaded, keyed=entries) if entries else loaded


def checkpoint_key(target) -> str:
    """Which file `torch.save`/`torch.load` names, where a save and a load can be matched: a literal
    path (or a name bound to one), a path built by the same call, or the same attribute path
    (`args.checkpoint`, `self.ckpt_path`). A bare local name (`path`) may be another file in each
    function: no key."""
    literal = literal_of(target.value)
    if isinstance(literal, str):
        return "path:" + literal
    if target.value.cls == PATH and target.value.origin is not None:  # the same `os.path.join(...)`
        return f"built:{id(target.value.origin)}"
    key = dotted_name(target.node.value)
    return "attribute:" + key if key is not None and "." in key else ""


def note_prefix_mismatch(call) -> None:
    """`model.load_state_dict(state)` (the handler's call): a fact when one side's names surely carry
    the wrapper's prefix and the other's surely do not."""
    ev, receiver = call.ev, call.receiver
    state = call.args[0]
    if state.value.cls != STATE_DICT or not ev.recording or not _strict(call):
        return
    if state.value.prefixed_by is not None:
        wrap = state.value.prefixed_by if _surely_bare(receiver, ev.program.contexts.heap) else None
    else:
        wrap = _surely_wrapped(receiver)
    if wrap is not None and ev.first_time("state-dict-prefix", state.value, call.node):
        ev.program.facts.state_dict_prefixes.append(StateDictPrefixMismatch(
            call.node, Operand(call.receiver_node, receiver), Operand(state.node.value, state.value), wrap,
            prefixed_state=state.value.prefixed_by is not None))


def _strict(call) -> bool:
    """Strict loading (the default): `strict=False` skips the names that do not match."""
    positional = [a for a in call.args if a.keyword is None]
    strict = call.keyword("strict") or (positional[1] if len(positional) > 1 else None)
    return strict is None or literal_of(strict.value) is True


def _wrap_of(module: Value) -> Optional[cst.CSTNode]:
    return next((side.wrapped_at for side in (module,) + module.alternatives if side.wrapped_at is not None), None)


def _surely_bare(module: Value, heap: Heap) -> bool:
    """A module no wrapper has held: its names are its own on every path."""
    return (module.kind == MODULE and module.ident is not None and module.ident not in heap.wrapped
            and _wrap_of(module) is None)


def _surely_wrapped(module: Value) -> Optional[cst.CSTNode]:
    """The wrap, when the module is a wrapper on every path (or on every machine with the GPUs the
    split asks for)."""
    if module.kind != MODULE:
        return None
    if module.alternatives:
        wraps = [side.wrapped_at for side in module.alternatives]
        return wraps[0] if all(wrap is not None for wrap in wraps) else None
    return module.wrapped_at
