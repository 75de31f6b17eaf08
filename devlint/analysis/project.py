"""The project index: what each checked file offers to the files that import it, and where a file
sits among them (`ProjectPlace`).

A run analyses every file once on its own (phase 1) and keeps a small,
JSON-friendly summary of its top level: `nn.Module` classes and their bases,
what each function returns, module-level values such as a chosen device, and
the names it imports (so re-exports through `__init__.py` can be followed).
The index joins those summaries; files that import something the index knows
are analysed once more with it (phase 2), so `model = build_model()` in
`train.py` knows what `build_model` in `models.py` returns.

A summary may point at another module ("returns an instance of
`models.Net`"): such references are resolved here, lazily, with a depth limit
that also breaks import cycles.
"""
from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from . import torch_api as api
from .facts import UNGUARDED_CUDA_API
from .hot_path import STEPPING, TRAINING
from .lattice import (
    ANY, BATCH, CLASS, DEVICE, FUNCTION, MODULE, OWN_FORWARD_MOVES, REF, SOURCE_DEVICE_AWARE, SOURCE_MIXED,
    SYMBOLIC, TENSOR, TUPLE, UNKNOWN, UNKNOWN_VALUE, Device, Source, Value,
)
from .names import dotted_name

#: Kinds worth exporting as module-level values.
_VALUE_KINDS = frozenset({DEVICE, MODULE})
#: Kinds a function result must have to be worth exporting.
_RESULT_KINDS = frozenset({DEVICE, MODULE, "tensor", "batch", "loader", ANY, TUPLE})
PROJECT_SOURCE = Source.PROJECT
#: what another file's summary leaves unsaid (a tuple item, a result it could not describe): unknown,
#: and a variable it is stored in is not a device to guess about from its name (e3nn's
#: `dtype, device = explicit_default_types(dtype, device)` gives the default device)
UNSAID = Value(source=SOURCE_MIXED)
_MAX_DEPTH = 8

Exports = dict  # {"module", "root", "package", "imports", "classes", "functions", "values"}


@lru_cache(maxsize=4096)
def _is_package_dir(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "__init__.py"))


def module_name(path: str) -> Tuple[str, str, bool]:
    """(import root, dotted module name, is a package) for a file, from the `__init__.py` files around it."""
    directory, filename = os.path.split(os.path.abspath(path))
    stem = filename.rsplit(".", 1)[0]
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    while _is_package_dir(directory):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
    return directory, ".".join(parts), is_package


def absolute_import(module: str, is_package: bool, level: int, target: str) -> Optional[str]:
    """`from ..models import Net` inside `pkg.sub.train` -> `pkg.models`."""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([target] if target else [])) or None


# --- export: a Value to plain data and back ---------------------------------------

def export_value(value: Value, params: Iterable[str] = ()) -> Optional[dict]:
    """Plain data for a value another file may receive; None when it says nothing."""
    if value.kind == TUPLE and value.items:  # `return images.to(device), labels.to(device)`
        items = [export_value(item, params) for item in value.items]
        if not any(items):
            return None
        return {"kind": TUPLE, "device": [UNKNOWN.kind, None, ""], "source": "", "stateful": None, "ref": "",
                "items": items}
    device = value.device
    if device.kind == SYMBOLIC and device.key not in params:
        device = UNKNOWN
    ref = value.cls if value.source == PROJECT_SOURCE else ""
    if not device.known and not ref and value.kind not in (MODULE, "loader"):
        return None
    if value.kind not in _RESULT_KINDS:
        return None
    return {"kind": value.kind, "device": [device.kind, device.index, device.key], "source": value.source,
            "stateful": value.stateful, "ref": ref}


def import_value(data: dict, node) -> Value:
    """A value from another file; devices keep the mark, so their root is reported only there."""
    if data["kind"] == TUPLE:
        return Value(kind=TUPLE, origin=node, items=tuple(
            import_value(item, node) if item is not None else UNSAID for item in data["items"]))
    kind, index, key = data["device"]
    source = PROJECT_SOURCE if data["kind"] == DEVICE else data["source"] if data["source"] != PROJECT_SOURCE else ""
    return Value(kind=data["kind"], device=Device(kind, index, key), origin=node, source=source,
                 stateful=data["stateful"], ident=id(node) if data["kind"] == MODULE else None)


class ProjectIndex:
    """All phase-1 summaries of a run, and name resolution across them."""

    def __init__(self, summaries: Iterable[Exports]) -> None:
        self.modules: Dict[Tuple[str, str], Exports] = {}
        self.roots_by_name: Dict[str, List[str]] = {}
        for summary in summaries:
            if summary is None:
                continue
            self.modules[(summary["root"], summary["module"])] = summary
            self.roots_by_name.setdefault(summary["module"], []).append(summary["root"])
        self.names = frozenset(self.roots_by_name)
        self._contexts: Optional[Dict[Tuple[str, str, str], List[list]]] = None
        self.accelerated = any(summary.get("accelerated") for summary in self.modules.values())
        #: some file's process setup raises where CUDA is missing: the whole project runs with CUDA
        self.needs_cuda = any(summary.get("needs_cuda") for summary in self.modules.values())
        #: attribute names some `_apply` override of the project carries along (see apply_overrides)
        self.applied = frozenset(name for summary in self.modules.values() for name in summary.get("applied", ()))

    # --- finding things ---------------------------------------------------------

    def module(self, root: str, name: str) -> Optional[Exports]:
        found = self.modules.get((root, name))
        if found is None:
            roots = self.roots_by_name.get(name, ())
            if len(roots) == 1:
                found = self.modules[(roots[0], name)]
        return found

    def lookup(self, root: str, qualname: str, depth: int = 0) -> Optional[Tuple[str, dict, Exports]]:
        """What `qualname` is: ("class"|"function"|"value", data, defining module), following re-exports."""
        if depth > _MAX_DEPTH or "." not in qualname:
            return None
        module_part, name = qualname.rsplit(".", 1)
        summary = self.module(root, module_part)
        if summary is None:
            return None
        for kind in ("classes", "functions", "values"):
            data = summary[kind].get(name)
            if data is not None:
                return kind[:-1] if kind != "classes" else "class", data, summary
        target = summary["imports"].get(name)
        if target is not None:
            return self.lookup(summary["root"], target, depth + 1)
        if self.module(root, qualname) is not None:
            return None  # a submodule: `import pkg.models as m`
        return None

    def imports_device_setter(self, summary: Optional[Exports]) -> bool:
        """Does the file use something of a project module that calls `torch.cuda.set_device`? (It is
        process-wide: a setup helper called from here picks each rank's GPU for plain "cuda".)"""
        if summary is None:
            return False
        for _, target in summary["needs"]:
            found = self.lookup(summary["root"], target)
            if found is not None and found[2].get("sets_device"):
                return True
        return False

    def is_module_class(self, root: str, qualname: str, depth: int = 0) -> Optional[bool]:
        if depth > _MAX_DEPTH:
            return None
        found = self.lookup(root, qualname)
        if found is None or found[0] != "class":
            known = qualname in api.MODULE_BASES or api.is_nn_module_class(qualname) or qualname.endswith(api.MODULE_BASE_NAMES)
            return True if known else None
        _, data, summary = found
        if data["module"] is not None:
            return data["module"]
        verdicts = [self.is_module_class(summary["root"], base, depth + 1) for base in data["bases"]]
        if any(verdicts):
            return True
        return False if verdicts and all(v is False for v in verdicts) else None

    # --- values at a call site ---------------------------------------------------------

    def call(self, root: str, qualname: str, node, default_device: Device, positional: List[Value],
             keywords: Dict[str, Value], depth: int = 0) -> Optional[Value]:
        """The value of calling a project class or function; None when unknown."""
        found = self.lookup(root, qualname) if depth <= _MAX_DEPTH else None
        if found is None:
            return None
        kind, data, summary = found
        if kind == "class":
            verdict = self.is_module_class(root, qualname)
            if not verdict:
                return None
            # a wrapper built around a module it is given (a LoRA layer around a Linear) is where that
            # module is, which this call does not say
            # (or one told its device, given what an unknown wrapper made of a module, or built around
            # tensors that are not on the host: gpytorch's `FixedNoiseGaussianLikelihood(noise=noise)`)
            given = list(positional) + list(keywords.values())
            wraps = any(v.kind == MODULE or v.source == SOURCE_DEVICE_AWARE
                        or (v.kind in (DEVICE, TENSOR, BATCH) and not v.device.is_cpu) for v in given)
            return Value(kind=MODULE, device=UNKNOWN if wraps else default_device, origin=node, ident=id(node), cls="",
                         stateful=data["stateful"] if data["stateful"] is not None else None,
                         scatters=OWN_FORWARD_MOVES if data.get("moves_input") else "")
        if kind == "function":
            bound = dict(zip(data["params"], positional))
            bound.update(keywords)
            for param in data["params"]:
                # left to its default, which the summary does not know: not the caller's own `device`
                bound.setdefault(param, UNKNOWN_VALUE)
            result = self.resolve(summary["root"], data["result"], node, default_device, bound, depth + 1)
            # (a function of the project whose summary says nothing of its result: what it returns is
            # unknown, and not to be guessed from the name it is given here)
            return result if result is not None else UNSAID
        return None

    def trains(self, root: str, qualname: str) -> bool:
        found = self.lookup(root, qualname)
        return found is not None and found[0] == "function" and bool(found[1].get("trains"))

    def group_backend(self, root: str, qualname: str) -> str:
        found = self.lookup(root, qualname)
        return (found[1].get("backend") or "") if found is not None and found[0] == "function" else ""

    def value(self, root: str, qualname: str, node) -> Optional[Value]:
        found = self.lookup(root, qualname)
        if found is None or found[0] != "value":
            return None
        return self.resolve(found[2]["root"], found[1], node, UNKNOWN, {})

    def resolve(self, root: str, data: Optional[dict], node, default_device: Device,
                bound: Dict[str, Value], depth: int = 0) -> Optional[Value]:
        if data is None or depth > _MAX_DEPTH:
            return None
        if data["ref"]:
            inner = self.call(root, data["ref"], node, default_device, [], {}, depth + 1)
            if inner is None:
                return None
            device = Device(*data["device"])
            return inner.with_device(device, node) if device.known else inner
        value = _bind(import_value(data, node), bound)
        return value if value.device.known or value.kind != ANY else None

    # --- calls into a file from the others ---------------------------------------------

    def contexts(self) -> Dict[Tuple[str, str, str], List[list]]:
        """Every call of a project function, by the function's (root, module, name)."""
        if self._contexts is None:
            self._contexts = {}
            for summary in self.modules.values():
                calls = summary.get("calls", ())
                # A loop that calls a training step of another file is a training loop: what else it calls is hot.
                training_loops = {loop for callee, _, _, _, loop in calls
                                  if loop is not None and self.trains(summary["root"], callee)}
                for callee, positional, keywords, heat, loop in calls:
                    if heat in ("", STEPPING) and loop in training_loops:
                        heat = TRAINING
                    found = self.lookup(summary["root"], callee)
                    if found is not None and found[0] == "function":
                        home = found[2]
                        key = (home["root"], home["module"], callee.rsplit(".", 1)[-1])
                        self._contexts.setdefault(key, []).append([positional, keywords, heat])
        return self._contexts

    def incoming(self, root: str, module: str, function: str, params) -> Tuple[Optional[Dict[str, Value]], str]:
        """The arguments of a function's only call in the project, bound to its parameters, and the
        heat of its hottest call (a function called from a training loop runs every step)."""
        calls = self.contexts().get((root, module, function), [])
        heats = {call[2] for call in calls}  # QUIET (a logging interval) is no heat
        heat = TRAINING if TRAINING in heats else STEPPING if STEPPING in heats else ""
        if len(calls) != 1:
            return None, heat
        positional, keywords, _ = calls[0]
        by_name = {p.name.value: p for p in params}
        bound = dict(zip(list(by_name), positional))
        bound.update(keywords)
        return {name: import_value(data, by_name[name]) for name, data in bound.items()
                if data is not None and name in by_name}, heat

    def digest_for_path(self, path: str) -> str:
        root, module, _ = module_name(path)
        summary = self.modules.get((root, module))
        return self.digest_for(summary) if summary is not None else ""

    def digest_for(self, summary: Exports) -> str:
        """A stable fingerprint of what the index tells this file; empty when it tells nothing new
        (then phase 1's result stands and the file is not analysed again)."""
        root = summary["root"]
        told = []
        for use, target in summary["needs"]:
            found = self.lookup(root, target)
            if found is None:
                continue
            kind, data, _ = found
            if kind == "class":
                if use != "value" and self.is_module_class(root, target):
                    told.append((use, target, "module", data["stateful"], data.get("moves_input")))
            elif kind == "function" and use == "call" and (data["result"] is not None or data.get("trains")
                                                           or data.get("backend")):
                told.append((use, target, repr(data["result"]), data.get("trains"), data.get("backend")))
            elif kind == "value" and use == "value":
                told.append((use, target, repr(sorted(data.items()))))
        if self.accelerated and not summary.get("accelerated") and any(c["module"] for c in summary["classes"].values()):
            told.append(("accelerated",))  # its modules' forward runs on the project's device
        if self.needs_cuda and not summary.get("needs_cuda") and summary.get("asks_for_cuda"):
            told.append(("needs_cuda",))  # its CUDA requests run in a process that requires CUDA
        if not summary.get("sets_device") and summary.get("shares_gpu") and self.imports_device_setter(summary):
            told.append(("sets_device",))  # its plain "cuda" is the GPU the setup chose for the rank
        if self.applied and any(c["module"] for c in summary["classes"].values()):
            told.append(("applied", sorted(self.applied)))  # plain tensors moved by an `_apply` elsewhere
        for name in summary["functions"]:
            calls = self.contexts().get((root, summary["module"], name), [])
            if (len(calls) == 1 and (any(calls[0][0]) or any(calls[0][1].values()))) or any(
                    c[2] in (TRAINING, STEPPING) for c in calls):
                told.append(("incoming", name, repr(calls)))
        return repr(told) if told else ""


class ProjectPlace:
    """Where a file sits in the checked project, and the index of the rest of it."""

    def __init__(self, root: str = "", module: str = "", is_package: bool = False,
                 names: frozenset = frozenset(), index: Optional[ProjectIndex] = None) -> None:
        self.root = root
        self.module = module
        self.is_package = is_package
        self.names = names          # dotted names of every checked file
        self.index = index          # None in phase 1
        self.needs: Set[tuple] = set()  # phase 1: project names whose meaning would change the analysis
        self.calls: List[list] = []     # phase 1: [callee, positional, keywords, heat, loop] of calls into the project
        self._call_at: Dict[int, int] = {}  # id(call node) -> its entry in `calls`

    @property
    def accelerated(self) -> bool:
        """Does some file of the project put things on an accelerator?"""
        return self.index is not None and self.index.accelerated

    @property
    def needs_cuda(self) -> bool:
        """Does the project's process setup refuse to run without CUDA (phase 2 only)?"""
        return self.index is not None and self.index.needs_cuda

    @property
    def sets_device(self) -> bool:
        """Does a project module this file uses call `torch.cuda.set_device` (phase 2 only)?"""
        return self.index is not None and self.index.imports_device_setter(self.index.module(self.root, self.module))

    @property
    def applied(self) -> frozenset:
        """Attribute names the project's `_apply` overrides carry along (phase 2 only)."""
        return self.index.applied if self.index is not None else frozenset()

    @property
    def is_test_module(self) -> bool:
        """A pytest file (`test_*.py`, `*_test.py`, `conftest.py`): the classes it defines serve its
        own tests, which say where they run; no other caller puts them on the accelerator."""
        leaf = self.module.rsplit(".", 1)[-1]
        return leaf.startswith("test_") or leaf.endswith("_test") or leaf == "conftest"

    def owns(self, qualname: str) -> bool:
        """Does `qualname` name something defined in a checked file? (Never torch itself: what
        devlint knows about torch comes from its table, even when torch's own sources are checked.)"""
        if qualname.startswith("torch."):
            return False
        parts = qualname.split(".")
        return any(".".join(parts[:i]) in self.names for i in range(1, len(parts)))

    def is_module_class(self, qualname: str) -> bool:
        if self.index is None:
            if self.owns(qualname):
                self.needs.add(("base", qualname))
            return False
        return bool(self.index.is_module_class(self.root, qualname))

    def call(self, qualname: str, node, args, env, heat: str = "", recording: bool = True,
             loop: Optional[int] = None) -> Optional[Value]:
        """Calling a project class or function: its summary, or a reference to resolve later."""
        if not self.owns(qualname):
            return None
        if self.index is None:
            self.needs.add(("call", qualname))
            if recording:  # once per call site: not from the silent passes over a loop
                entry = [qualname, [export_value(a.value) for a in args if a.keyword is None and not a.node.star],
                         {a.keyword: export_value(a.value) for a in args if a.keyword is not None}, heat, loop]
                # a loop's first iteration and its final pass both record: the final pass, which
                # knows what the loop is, has the last word
                if id(node) in self._call_at:
                    self.calls[self._call_at[id(node)]] = entry
                else:
                    self._call_at[id(node)] = len(self.calls)
                    self.calls.append(entry)
            return Value(kind=ANY, cls=qualname, source=PROJECT_SOURCE, origin=node)
        positional = [a.value for a in args if a.keyword is None and not a.node.star]
        keywords = {a.keyword: a.value for a in args if a.keyword is not None}
        return self.index.call(self.root, qualname, node, env.default_device, positional, keywords)

    def incoming(self, function: str, params: List[cst.Param]) -> Tuple[Optional[Dict[str, Value]], str]:
        """What a function of this file receives from its only call in another file, and how hot
        the hottest call is."""
        if self.index is None:
            return None, ""
        return self.index.incoming(self.root, self.module, function, params)

    def trains(self, qualname: str) -> bool:
        """Is a project function a training step (so a loop calling it is a training loop)?"""
        return self.index is not None and self.index.trains(self.root, qualname)

    def group_backend(self, qualname: str) -> str:
        """The backend of the process group calling this project function starts ("nccl": the
        program needs GPUs; "gloo": it runs on CPUs), or ""."""
        if self.index is None or not self.owns(qualname):
            return ""
        return self.index.group_backend(self.root, qualname)

    def value(self, qualname: str, node) -> Optional[Value]:
        if not self.owns(qualname):
            return None
        if self.index is None:
            if api.is_device_name(qualname.rsplit(".", 1)[-1]):  # what other files export: chosen devices
                self.needs.add(("value", qualname))
            return None
        return self.index.value(self.root, qualname, node)



def _bind(value: Value, bound: Dict[str, Value]) -> Value:
    """A summary's symbolic devices (`device` parameters) replaced by what the call passed."""
    if value.items:
        return replace(value, items=tuple(_bind(item, bound) for item in value.items))
    if value.device.kind == SYMBOLIC and value.device.key in bound:
        argument = bound[value.device.key]
        device = argument.device if argument.kind in (DEVICE, "tensor", "batch", MODULE) else UNKNOWN
        return value.with_device(device)
    return value


def summarise(program, root: str, module: str, is_package: bool) -> Exports:
    """The phase-1 summary of one analysed file (see `ProjectIndex`)."""
    summary: Exports = {"root": root, "module": module, "package": is_package, "imports": {},
                        "classes": {}, "functions": {}, "values": {}, "needs": sorted(program.place.needs),
                        "calls": program.place.calls, "accelerated": program.accelerator_evidence,
                        "needs_cuda": program.setup_needs_cuda,
                        "sets_device": program.facts.distributed.set_device,
                        "asks_for_cuda": bool(program.facts.unguarded) or any(
                            misuse.kind == UNGUARDED_CUDA_API for misuse in program.facts.misuses),
                        "shares_gpu": bool(program.facts.distributed.shared_placements),
                        "applied": sorted(program.applied_attributes)}
    for name, value in program.module_env.values.items():
        if "." in name:
            continue
        if value.kind == REF:
            summary["imports"][name] = value.cls
        elif value.kind == CLASS:
            info = program.classes.get(value.cls)
            if info is not None:
                program.ensure_class(info)
                summary["classes"][name] = {"bases": program.base_names(info), "module": info.is_module,
                                            "stateful": info.stateful, "moves_input": program.moves_own_input(info)}
        elif value.kind == FUNCTION:
            info = program.functions.get(id(value.origin))
            if info is not None and info.result is not None:
                params = [p.name.value for p in info.parameters()]
                summary["functions"][name] = {"result": export_value(info.result, params), "params": params,
                                              "trains": info.trains,
                                              "backend": program.facts.requirements.group_backends.get(name, "")}
        elif value.kind in _VALUE_KINDS:
            exported = export_value(value)
            if exported is not None:
                summary["values"][name] = exported
    return summary


def summarise_imports(module, root: str, name: str, is_package: bool) -> Exports:
    """A summary holding only re-exports, for an `__init__.py` with nothing else to analyse."""
    summary: Exports = {"root": root, "module": name, "package": is_package, "imports": {},
                        "classes": {}, "functions": {}, "values": {}, "needs": []}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
                continue
            target = dotted_name(small.module) if small.module is not None else ""
            base = absolute_import(name, is_package, len(small.relative), target or "") if small.relative else target
            if not base:
                continue
            for alias in small.names:
                imported = dotted_name(alias.name) or ""
                local = alias.asname.name.value if alias.asname is not None else imported
                summary["imports"][local] = f"{base}.{imported}"
    return summary
