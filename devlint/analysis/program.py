"""One file as a whole: module-level code, classes, functions and their summaries.

The module body is interpreted first, in order. A call of a function, method,
constructor or `forward` of this file is interpreted in the caller's context
(`contexts.py`: arguments bound, the caller's state passed in, effects brought
back, memoised per abstract context). Afterwards every function gets its
generic run with symbolic parameters and the final module state: silent for
functions some call reached, recording for the others (library code), and
its return value is the summary other files and capped calls use.
"""
from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import replace
from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from . import torch_api as api
from .env import Env, moved_copy
from .facts import ACCELERATOR_DEFAULT, ApiMisuse, FileFacts, UnguardedAccelerator, UnregisteredState, caller_chains
from .rebound_fields import FieldWrites, as_seen_unseeded, field_writes
from .apply_overrides import attributes_applied
from .call_order import callers_first
from .function_syntax import FunctionSyntax, index_functions
from .declarations import ClassInfo, FunctionInfo
from .heap import SEQUENCE_ITEMS
from .hot_path import is_interval_test
from .call_args import caller_arg
from .value_queries import host_data, is_move_call
from .contexts import ContextRunner
from .interpreter import Interpreter, Scope, wrapper_tests
from .invocation import site_from
from .lattice import (
    ANY, BATCH, CLASS, DEVICE, DISTRIBUTION, FUNCTION, HOST, LIST, LOADER, METHOD, MODULE, OBJECT, OPTIMIZER,
    PROCESS_START_GPU, REF,
    SOURCE_AVAILABILITY, SOURCE_UNREGISTERED, SYMBOLIC, TENSOR, TUPLE, UNGUARDED, UNKNOWN, UNKNOWN_VALUE, Device,
    Value, join_all, join_paths, keyed_dict, symbolic,
)
from .names import child_nodes, dotted_name, last_identifier, root_name, string_value, sub_expressions, walk
from .project import PROJECT_SOURCE, ProjectPlace

MANUAL_REGISTRATION = frozenset({"add_module", "register_module", "register_parameter"})

#: Text that shows a file cares about accelerators at all.  In a file without
#: it, `forward` inputs are not assumed to live on an accelerator.
_ACCELERATOR_TEXT = re.compile(r"cuda|\bmps\b|xpu|accelerat|device|\.to\(")
#: objects of several classes (a list of callbacks) a method call visits, at most
_MAX_RECEIVERS = 8
#: `self.NAME(` or `self.NAME.`: a field used as an object (called, or its attributes read)
_OBJECT_FIELD_USE = re.compile(r"\bself\.([A-Za-z_]\w*)\s*[(.\[]")
_LIGHTNING_STEPS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
_TENSOR_ANNOTATIONS = frozenset({"Tensor", "torch.Tensor", "FloatTensor", "LongTensor", "torch.FloatTensor", "torch.LongTensor"})


def _stays_when_module_moves(value: Value) -> bool:
    """A tensor of a known device that is no parameter and never 0-dim: `.to()` leaves it where it is.
    (A tensor made on "the module's device" or a device variable says nothing sure about where it is
    when the module moves: only a concrete device does.)"""
    return (value.kind == TENSOR and not value.parameter and value.scalar is False and value.device.known
            and value.device.kind != SYMBOLIC)


def _written_tensor_list(value: Value) -> bool:
    """A list of tensors written out or built by a comprehension (`[make(s) for s in sizes]`), on a
    known device and no parameters: as seen as one element (a batch), it stays where it was made."""
    return (value.kind == BATCH and isinstance(value.origin, (cst.List, cst.ListComp, cst.Tuple))
            and not value.parameter and value.scalar is not True and value.device.known
            and value.device.kind != SYMBOLIC)


class Program:
    def __init__(self, module: cst.Module, source: str, place: Optional[ProjectPlace] = None) -> None:
        self.module = module
        self.source = source
        self._parameters_shaped: Optional[bool] = None
        self._name_uses: Optional[Counter] = None
        self._applied: Optional[frozenset] = None
        self._object_fields: Optional[frozenset] = None
        self._field_writes: Optional[FieldWrites] = None
        self.place = place or ProjectPlace()
        self.facts = FileFacts()
        self.reported: Set[int] = set()
        # A model file that never says "device" is still run on one if its project does.
        self.accelerator_evidence = bool(_ACCELERATOR_TEXT.search(source)) or self.place.accelerated
        #: the file's text tests for CUDA or names the CPU somewhere (then some function's may)
        self._text_offers_cpu_path = bool(api.CPU_PATH_TEXT.search(source))
        self.tests_availability = bool(api.AVAILABILITY_TEXT.search(source))
        #: the file asks somewhere whether an accelerator is there (a `"cpu"` else-branch alone does not)
        self.asks_availability = bool(api.AVAILABILITY_TEXT.search(source))
        #: the file asks for CUDA itself somewhere (`"cuda"`, `.cuda()`) and never names its availability
        #: (a test of it, even one that forgets the call, is another finding's root)
        self.cuda_without_availability = (bool(api.CUDA_REQUEST_TEXT.search(source)) and not self.asks_availability
                                          and "is_available" not in source)
        #: the process setup (`init_process_group`, `set_device`) raises where CUDA is missing: the
        #: project it belongs to runs only with CUDA (nanotron's `initialize_torch_distributed`)
        self.setup_needs_cuda = self.asks_availability and _setup_refuses_cpu(module)
        #: a test module that skips itself where there is no GPU, or a file that imports a GPU-only
        #: package (triton, vllm...): everything in it runs with CUDA
        self.module_skipped_without_accelerator = (self.asks_availability and _skipped_without_accelerator(module)
                                                   or _imports_gpu_only_package(module))
        self.facts.requirements.runs_without_cuda = self._text_offers_cpu_path
        # (`torch.cuda.set_device` is process-wide: a setup helper in another file picks each rank's GPU)
        self.facts.distributed.set_device = self.place.sets_device
        self.facts.requirements.setup_needs_cuda = self.setup_needs_cuda or self.place.needs_cuda
        self.module_env = Env(current_gpu=PROCESS_START_GPU)  # the file's own code runs as a process starts
        self.functions: Dict[int, FunctionInfo] = {}
        #: names of the file's functions that only answer an interval test
        #: (`def is_gradient_accumulation_boundary(self): return (self.step + 1) % self.n == 0`),
        #: noted as each function or class is declared
        self.interval_predicates: Set[str] = set()
        #: functions of the file that answer whether their argument is a DataParallel/DDP wrapper
        self.wrapper_predicates: Set[str] = set()
        self.classes: Dict[str, ClassInfo] = {}
        self.class_order: List[ClassInfo] = []
        #: factory calls that made a CPU tensor in a function holding an accelerator device of its
        #: own (`torch.tensor(cfg.eos_token_id)` beside `device=device`): DEV402's kept tensors
        self.made_beside_device: Set[int] = set()
        #: (class, attribute) pairs that a method moves by hand (`self.pe.to(x.device)`)
        self.moved_by_hand: Set[tuple] = set()
        #: origins of plain CPU tensor attributes that met the module's tensors (confirms DEV105)
        self.unregistered_used: Set[int] = set()
        #: DataParallel/DDP construction -> its `device_ids` argument, checked again where the wrapper moves
        self.wrap_device_ids: Dict[int, object] = {}
        #: each lambda of the file -> the scope it was written in; the ones being called now
        self.lambda_scopes: Dict[int, Env] = {}
        self.lambdas_running: Set[int] = set()
        #: (DataParallel/DDP construction, attribute) set on the wrapper itself after the wrap
        self.wrapper_fields: Set[Tuple[int, str]] = set()
        self._syntax_facts: Dict[tuple, object] = {}
        #: batch origin -> the DataLoader(...) it came from; loader -> (pin_memory, workers)
        self.batch_loaders: Dict[int, cst.CSTNode] = {}
        self.loader_options: Dict[int, tuple] = {}
        #: argparse destination -> its literal default (`--workers`, `default=0`): what `args.workers`
        #: is on a run without the flag, for options that are judged by their defaults
        self.argument_defaults: Dict[str, object] = {}
        #: command-line options whose default is a device (`--device`), by destination: their default
        self.argument_devices: Dict[str, Value] = {}
        #: (kind, origin) pairs already reported by the hot-path and parallel rules
        self.hot_reported: Set[tuple] = set()
        #: calls of this file's functions interpreted in context, and the heap of objects they build
        self.contexts = ContextRunner(self, len(source))
        self._syntax: Optional[Dict[int, FunctionSyntax]] = None

    # --- driver -------------------------------------------------------------

    def run(self) -> FileFacts:
        top = Interpreter(self, Scope())
        top.settle_cuda_calls(top.exec_block(self.module.body, self.module_env))
        self._note_global_devices()
        # Constructors first, then free functions, then methods: each may call the next ones in
        # context. A function some call interpreted in its own context has its facts from there;
        # its generic run (symbolic parameters) is silent and only gives its summary.
        reached = self.contexts.reached
        for info in self.class_order:
            self.ensure_class(info)
        for info in callers_first(list(self.functions.values()), _node_of, _called_by_name, _calls_of):
            arguments, hot = self._calls_from_other_files(info)
            self.analyse(info, arguments=arguments, hot=hot, silent=id(info.node) in reached)
        for info in self.class_order:  # constructors no call read in context: their generic facts
            init = info.methods.get("__init__")
            if init is not None and init.owner is info and id(init.node) not in reached:
                self.reanalyse(init, seed=info.init_seed)
        # (each method once: a class's table also lists the methods it inherits)
        methods = list({id(method.node): method for info in self.class_order for method in info.methods.values()}.values())
        for method in callers_first(methods, _node_of, _called_on_self, _calls_of):
            self.analyse(method, silent=id(method.node) in reached)
        if self._text_offers_cpu_path and not self.place.is_test_module:
            for info in list(self.functions.values()) + methods:
                self._note_keyword_defaults(info)
        self.facts.unregistered_state = [fact for fact in self.facts.unregistered_state if self._still_unregistered(fact)]
        if self.place.is_test_module:
            # a test steps a model a few times to check a result: how fast each step is is not its
            # concern (a per-step `.item()`, an unpinned loader), while placement bugs still are
            self.facts.host_syncs.clear()
            self.facts.waste.clear()
            self.facts.loader_feeds.clear()
        self.facts.chains = caller_chains(self.facts)
        _drop_repeated_facts(self.facts)
        return self.facts

    def offers_cpu_path(self, definition: cst.CSTNode) -> bool:
        """Does this function's (or class's) own text test for CUDA or name the CPU? (Asked at every
        call in context: a file whose text does neither answers without rendering its functions.)"""
        if not self._text_offers_cpu_path:
            return False
        syntax = self.syntax.get(id(definition))
        if syntax is None:  # (not a definition of this file: asked once, remembered)
            syntax = self.syntax[id(definition)] = FunctionSyntax(
                offers_cpu_path=any(_offers_cpu_path(node) for node in walk(definition)))
        return syntax.offers_cpu_path

    @property
    def syntax(self) -> Dict[int, FunctionSyntax]:
        """What each function of the file contains (`function_syntax`), from one walk."""
        if self._syntax is None:
            self._syntax = index_functions(self.module, _offers_cpu_path if self._text_offers_cpu_path else None)
        return self._syntax

    @property
    def rebound_fields(self) -> frozenset:
        """Attribute names this file assigns after construction (see `rebound_fields`)."""
        return self._writes().rebound

    @property
    def moved_fields(self) -> frozenset:
        """Attribute names this file sets to a moved value (see `rebound_fields.FieldWrites`)."""
        return self._writes().moved

    def _writes(self) -> FieldWrites:
        if self._field_writes is None:
            self._field_writes = field_writes(self.module, self.source)
        return self._field_writes

    @property
    def fields_used_as_objects(self) -> frozenset:
        """Names of `self.NAME` fields this file calls or reads attributes of (`self.NAME(...)`, `self.NAME.x`)."""
        if self._object_fields is None:
            self._object_fields = frozenset(_OBJECT_FIELD_USE.findall(self.source))
        return self._object_fields

    @property
    def applied_attributes(self) -> frozenset:
        """Attributes this file's `_apply` overrides carry along when a module moves."""
        if self._applied is None:
            self._applied = attributes_applied(self.module, self.source)
        return self._applied

    def _note_global_devices(self) -> None:
        """A module-level `device = "cuda"` is the program's (or the project's) device: its root."""
        for name, value in self.module_env.values.items():
            if (value.kind == DEVICE and value.device.kind == UNGUARDED and value.origin is not None
                    and value.source != PROJECT_SOURCE and api.is_device_name(name)):
                self.facts.unguarded.append(UnguardedAccelerator(value.origin, value.origin))

    def _still_unregistered(self, fact: UnregisteredState) -> bool:
        """DEV105 holds unless `__init__` registered the modules itself (add_module,
        a final nn.ModuleList(...)) or a method moves the tensor by hand."""
        info = self.classes.get(fact.owner)
        if fact.what in ("tensor", "tensors"):  # a bug only where a method uses it with the module's tensors
            stored = fact.value.items if fact.what == "tensors" and fact.value.items else (fact.value,)
            used = any(id(value.origin) in self.unregistered_used for value in stored)
            applied = fact.attribute in self.applied_attributes or fact.attribute in self.place.applied
            return used and not applied and (fact.owner, fact.attribute) not in self.moved_by_hand
        if info is None or info.registers_manually or fact.attribute in info.module_assigned:
            return False
        if (fact.owner, fact.attribute) in self.moved_by_hand:
            return False
        final = info.attrs.get("self." + fact.attribute)
        # (still the plain container at the end of `__init__`, not replaced by a registering one)
        return final is None or final.kind in (LIST, TUPLE, ANY) or (fact.parameters and final.kind == BATCH and final.parameter)

    def same_batch(self, origin: Optional[cst.CSTNode], part: cst.CSTNode) -> None:
        """`x, y = batch`: the parts come from the batch's loader."""
        loader = self.batch_loaders.get(id(origin)) if origin is not None else None
        if loader is not None:
            self.batch_loaders[id(part)] = loader

    def self_device(self) -> Device:
        return symbolic("self") if self.accelerator_evidence and not self.place.is_test_module else UNKNOWN

    def base_names(self, info: ClassInfo) -> List[str]:
        """Qualified names of a class's bases, for the project index."""
        evaluator = Interpreter(self, Scope(outer=info.outer))
        evaluator.silent += 1
        names = []
        for base in info.node.bases:
            value = evaluator.eval(base.value, Env())
            if value.kind == REF:
                names.append(value.cls)
            elif value.kind == CLASS:
                names.append(f"{self.place.module}.{value.cls}")
        return names

    # --- declarations -----------------------------------------------------------

    def declare_function(self, node: cst.FunctionDef, scope: Scope, env: Env) -> Value:
        self.functions[id(node)] = FunctionInfo(node, None, [env] + scope.outer, self.syntax.get(id(node)))
        if _answers_interval_test(node):
            self.interval_predicates.add(node.name.value)
        if _answers_wrapper_test(node):
            self.wrapper_predicates.add(node.name.value)
        return Value(kind=FUNCTION, cls=node.name.value, origin=node)

    def builds_parts(self, info: FunctionInfo) -> bool:
        """Is this a method other than `__init__` that adds parts to the module it belongs to?"""
        owner = info.owner
        if owner is None or info.name == "__init__":
            return False
        self.ensure_class(owner)
        return _acts_as_module(owner) and _builds_submodules(info, owner)

    def first_report(self, node: cst.CSTNode) -> bool:
        """True the first time a context-free fact is noted at `node`, whichever run meets it."""
        key = ("context-free", id(node))
        if key in self.hot_reported:
            return False
        self.hot_reported.add(key)
        return True

    def declare_class(self, node: cst.ClassDef, scope: Scope, env: Env) -> Value:
        if node.name.value.endswith(api.CONFIG_CLASS_SUFFIXES):
            self._note_config_defaults(node)
        info = ClassInfo(node, [env] + scope.outer, self.syntax)
        self.classes[info.name] = info
        self.interval_predicates.update(item.name.value for item in node.body.body
                                         if isinstance(item, cst.FunctionDef) and _answers_interval_test(item))
        self.class_order.append(info)
        return Value(kind=CLASS, cls=info.name, origin=node)

    def _note_config_defaults(self, node: cst.ClassDef) -> None:
        """`device: str = "cuda"` in a config class: every run that keeps the default needs a GPU."""
        for statement in node.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.AnnAssign) and small.value is not None:
                    target, value = small.target, small.value
                elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                    target, value = small.targets[0].target, small.value
                else:
                    continue
                device = api.parse_device_string(string_value(value) or "")
                if isinstance(target, cst.Name) and api.is_device_name(target.value) and device is not None and device.kind == api.CUDA:
                    self.facts.misuses.append(ApiMisuse(value, ACCELERATOR_DEFAULT, "config default"))

    def _note_keyword_defaults(self, info: FunctionInfo) -> None:
        """`def one_hot(x, n, device="cuda")`, an API this file never calls, in a file that otherwise
        runs without CUDA: every caller elsewhere that keeps the default needs a GPU. (The file's own
        calls decide for themselves: one that keeps the default is a DEV301 at the default; a helper
        every call gives a device asks for nothing.)"""
        # (the text counts the `def` itself, or the class statement of an `__init__`)
        name = info.owner.name if info.owner is not None and info.name == "__init__" else info.name
        if self.accelerator_only(info) or self.uses_of(name) > 1:
            return
        for param in info.parameters():
            device = api.parse_device_string(string_value(param.default) or "") if param.default is not None else None
            if device is not None and device.kind == api.CUDA and api.is_device_name(param.name.value):
                self.facts.misuses.append(ApiMisuse(param.default, ACCELERATOR_DEFAULT, "keyword default"))

    # --- classes ----------------------------------------------------------------

    def parallel_base(self, name: str, caller) -> Optional[str]:
        """The DataParallel/DDP class a class of this file extends without a constructor of its own
        (mmcv's `MMDataParallel`): constructing it wraps a module as that class does."""
        info = self.classes.get(name)
        if info is None or "__init__" in info.methods:
            return None
        for base in info.node.bases:
            value = caller.eval(base.value, self.module_env)
            if value.kind == REF and value.cls in api.DATA_PARALLEL | api.DISTRIBUTED_DATA_PARALLEL:
                return value.cls
        return None

    def ensure_class(self, info: ClassInfo) -> ClassInfo:
        if info.state != "new":
            return info
        info.state = "running"
        evaluator = Interpreter(self, Scope(outer=info.outer))
        evaluator.silent += 1
        verdicts: List[Optional[bool]] = []
        inherited: Dict[str, Value] = {}
        mappings = 0
        for base in info.node.bases:
            value = evaluator.eval(base.value, Env())
            if value.kind == REF and (value.cls in api.MODULE_BASES or api.is_nn_module_class(value.cls)
                                      or value.cls.endswith(api.MODULE_BASE_NAMES)
                                      or self.place.is_module_class(value.cls)):
                verdicts.append(True)
                if api.is_nn_module_class(value.cls) and value.cls not in api.MODULE_BASES:
                    info.stateful = api.nn_class_is_stateful(value.cls.rsplit(".", 1)[-1], frozenset())
            elif value.kind == CLASS and value.cls in self.classes:
                parent = self.ensure_class(self.classes[value.cls])
                verdicts.append(parent.is_module)
                inherited.update(parent.attrs)
                info.buffers |= parent.buffers
                if parent.stateful is not None and not info.stateful:
                    info.stateful = parent.stateful
                for name, method in parent.methods.items():
                    info.methods.setdefault(name, method)
            elif (isinstance(base.value, cst.Name) and base.value.value in ("object", "list") and value.kind == ANY) or (
                    value.kind == REF and value.cls in api.NON_MODULE_BASES):
                verdicts.append(False)
            elif (value.cls if value.kind == REF else dotted_name(base.value)) in api.MAPPING_BASES:
                verdicts.append(False)
                mappings += 1
                if (value.cls if value.kind == REF else dotted_name(base.value)) in api.DICT_SUBCLASS_BASES:
                    info.is_dict = True
            elif value.kind == REF and "." in value.cls and api.is_standard_library(value.cls):
                verdicts.append(False)  # (`contextlib.ContextDecorator`, `enum.Enum`: no module)
            else:
                verdicts.append(None)
        inherited.update(self._class_constants(info, evaluator))
        info.mapping = mappings == len(verdicts) and mappings > 0 and not api.MAPPING_OVERRIDES & set(info.methods)
        if any(verdicts):
            info.is_module = True
        elif all(v is False for v in verdicts):
            info.is_module = False
        init = info.methods.get("__init__")
        if init is not None and init.owner is info:
            # silent: the class's fields are all this run is for here; `run` reads `__init__` for its
            # facts once it knows whether some construction interpreted it in context
            env = self.analyse(init, seed=inherited, silent=True)
            info.init_seed = inherited
            info.attrs = {key: value for key, value in (env.values.items() if env else ()) if key.startswith("self.") and key.count(".") == 1}
        else:
            info.attrs = inherited
        if info.is_module:
            # (a buffer registered by a helper of a base class the constructor called is state too)
            evidence = any(self._holds_state(value) for value in info.attrs.values()) or info.registers_buffers or any(
                self.classes[name].registers_buffers for name in self._file_bases(info))
            if _follows_input(info):
                # its forward moves its state to the input (`self.resampler.to(waveforms.device)`):
                # wherever an instance is, it computes where its input is
                info.stateful = False
            elif evidence or info.stateful:
                info.stateful = True
            elif info.unknown_submodule or None in verdicts:
                info.stateful = None
            else:
                info.stateful = False
        info.state = "done"
        return info

    @staticmethod
    def _class_constants(info: ClassInfo, evaluator: Interpreter) -> Dict[str, Value]:
        """Devices and small constants the class body sets (`device: torch.device = torch.device(...)`
        in a config dataclass): what `obj.device` is until `__init__` or a method says otherwise.
        Tensors and modules there are shared by all instances and are left out."""
        found: Dict[str, Value] = {}
        for line in info.node.body.body:
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for small in line.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    target, expression = small.targets[0].target, small.value
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    target, expression = small.target, small.value
                else:
                    continue
                if not isinstance(target, cst.Name):
                    continue
                value = evaluator.eval(expression, Env())
                # (a `"cuda"` default without fallback is the config default DEV303 reports there)
                if (value.kind == DEVICE and value.device.kind != UNGUARDED) or (
                        value.kind == HOST and (value.literal is not None or value.source == SOURCE_AVAILABILITY)) or (
                        value.kind == TUPLE and value.items and all(item.literal is not None for item in value.items)) or (
                        value.kind in (TUPLE, LIST) and host_data(value)) or (  # numbers: `class_weights = [1.0, 2.5]`
                        value.kind == REF):  # a class or function named there (`optimizer_cls = torch.optim.AdamW`)
                    found["self." + target.value] = value
        return found

    @staticmethod
    def _holds_state(value: Value) -> bool:
        return (value.kind == MODULE and value.stateful is not False) or (value.kind == TENSOR and value.parameter)

    def class_attribute(self, base: Value, attr: str) -> Value:
        if not base.cls and base.aliases and any(attr in self._methods_of(ident) for ident in base.aliases):
            return Value(kind=METHOD, cls=attr, items=(base,))  # a hook of one of several callbacks
        info = self.classes.get(base.cls)
        if info is None:
            return UNKNOWN_VALUE
        self.ensure_class(info)
        value = self.contexts.field(base, attr)  # this object's own field, when it is known
        if value is None:
            value = info.attrs.get("self." + attr)
        if value is None and attr in info.methods and base.ident is not None:
            return Value(kind=METHOD, cls=attr, items=(base,))  # `getattr(callback, hook)`, `step = self.fit`
        if value is None:
            return UNKNOWN_VALUE
        if base.kind == MODULE:
            return self.follows_module(value, info, base.device, base.origin, base.stray)
        return value

    def follows_module(self, value: Value, info: ClassInfo, device: Device, moved_at: Optional[cst.CSTNode] = None,
                       stray: Optional[cst.CSTNode] = None) -> Value:
        """An attribute as seen after the module moved to `device` (at `moved_at`, for messages).
        `stray` is the part the module left on the CPU since it last moved (see `Value.stray`)."""
        if value.kind == MODULE and value.stray is not None and value.stray is stray:
            return value  # replaced by a new CPU module after the move: there until the next move
        if value.kind == TENSOR and value.parameter and value.stray is not None:
            return value  # a buffer replaced after the module moved: where it was made, until the next move
        if value.kind == MODULE or (value.kind == TENSOR and value.parameter):
            # (the part itself, left behind before the module's latest move, went along with it; a
            # part that holds a stray part of its own still does)
            kept = value.stray if not (value.kind == MODULE and value.device.is_cpu) else None
            if moved_at is not None and value.device != device:
                return replace(value, device=device, origin=moved_at, via=None, stray=kept)
            return replace(value, device=device, stray=kept)
        if value.kind == TENSOR and value.cls == DISTRIBUTION:
            return value  # (not a tensor one could register: where it was built, it stays, and says so where used)
        if value.kind == TENSOR and value.scalar is not True:
            # A plain tensor attribute stays where it was made. On the CPU it is a bug only if a method
            # uses it with the module's tensors: that use confirms DEV105, reported where it is stored.
            return replace(value, source=SOURCE_UNREGISTERED) if value.device.known else UNKNOWN_VALUE
        if value.kind in (LIST, TUPLE) and any(item.kind == MODULE for item in value.items):
            return UNKNOWN_VALUE  # a plain list of modules: reported once where it is stored
        if value.kind in (LIST, TUPLE) and value.items and all(
                item.kind == TENSOR and not item.parameter and item.scalar is not True for item in value.items):
            # a plain list of tensors stays where its tensors were made, like a plain tensor attribute
            return replace(value, items=tuple(self.follows_module(item, info, device) for item in value.items))
        if _written_tensor_list(value):
            return replace(value, source=SOURCE_UNREGISTERED)
        if value.kind == BATCH and value.parameter:
            # a plain dict or list of parameters stays where it was made: DEV105's, where it is stored
            return replace(value, source=SOURCE_UNREGISTERED) if value.device.known else UNKNOWN_VALUE
        return value

    def instantiate(self, callee: Value, node: cst.Call, args, env: Env, caller=None, of_several: bool = False) -> Value:
        """`Net(...)`: a new object at this allocation site, its fields set by `__init__` run on the
        call's arguments."""
        info = self.classes.get(callee.cls)
        if info is None:
            return UNKNOWN_VALUE
        self.ensure_class(info)
        if info.mapping:  # `BatchEncoding({"input_ids": ids})`: that dict's items, and its class for messages
            contents = args[0].value if len(args) == 1 and args[0].keyword is None and not args[0].node.star else None
            if args and all(a.keyword is not None for a in args):  # `BatchEncoding(input_ids=ids, ...)`
                contents = keyed_dict(tuple((a.keyword, a.value) for a in args), node)
            return replace(contents, cls=info.name) if contents is not None and contents.kind == BATCH else UNKNOWN_VALUE
        # (one of several classes built at one call, `REGISTRY[name](args)`: one object per class there)
        site = hash((id(node), info.name)) if of_several else id(node)
        if _acts_as_module(info):
            instance = Value(kind=MODULE, device=env.default_device, origin=node, ident=site, cls=info.name,
                             stateful=info.stateful)
        elif info.is_module is False or _is_record_class(info.node):  # (a NamedTuple is no module)
            instance = Value(kind=OBJECT, origin=node, ident=site, cls=info.name)
        else:
            return UNKNOWN_VALUE
        self.contexts.heap.allocate(site, {})
        self.contexts.heap.note_class(site, info.name)
        init = info.methods.get("__init__")
        built = instance
        if init is not None and caller is not None:
            done = self._invoke(init, instance, node, args, caller, env)
            for ident, moved, weak in done.moved if done is not None else ():
                # `self.to(cfg.device)` in `__init__`: the new object is built where it moved
                instance = moved_copy(instance, ident, moved, weak)
        elif init is None and _is_record_class(info.node):
            # a dataclass or NamedTuple: its generated `__init__` stores each argument in its field,
            # then calls `__post_init__`
            self.contexts.heap.allocate(site, _record_fields(info.node, args))
            post_init = info.methods.get("__post_init__")
            if post_init is not None and caller is not None:
                self._invoke(post_init, instance, node, [], caller, env)
        if not self.contexts.heap.fields(site):
            self.contexts.heap.allocate(site, {key[len("self."):]: value for key, value in info.attrs.items()})
        elif instance.kind == MODULE and instance == built:  # (not moved by its own `__init__`)
            instance = self._built_where_weights_are(instance, self.contexts.heap.fields(site))
        if instance.kind == MODULE and instance.stateful is False and not _follows_input(info):
            # a wrapper of the module it was given (k-diffusion's `VDenoiser(inner)`): its weights are
            # that module's, which the class alone could not say
            held = [v.stateful for v in self.contexts.heap.fields(site).values() if v.kind == MODULE]
            if any(stateful is not False for stateful in held):
                instance = replace(instance, stateful=True if True in held else None)
        return instance

    @staticmethod
    def _built_where_weights_are(instance: Value, fields: Dict[str, Value]) -> Value:
        """A module whose `__init__` made all its parameters, buffers and submodules on one device
        (`torch.arange(n, device=device)` registered as buffers) is on that device, not the default."""
        # (a part without weights, a loss or an activation, has no device to be on)
        devices = {value.device for value in fields.values()
                   if (value.kind == MODULE and value.stateful is not False) or (value.kind == TENSOR and value.parameter)}
        if not devices:
            return instance
        if len(devices) > 1:  # (weights on several devices: where "the module" is, is unknown)
            return replace(instance, device=UNKNOWN)
        device = next(iter(devices))
        return instance if device == instance.device else replace(instance, device=device)

    def _invoke(self, info: "FunctionInfo", receiver: Optional[Value], node: cst.Call, args, caller, env: Env):
        """Interpret `info` for this call (see `contexts.py`); None when it cannot be."""
        site = site_from(node, args, env.guarded, caller.call_heat, caller.recording, env.default_device)
        site.cpu_path = caller.offers_cpu_path()
        site.made_in_step = caller.made_in_step
        site.current_gpu = env.current_gpu
        # `self._create_parameters()` in a module's `__init__`: that method builds the module too
        site.building = bool(caller.scope.in_module_init and receiver is not None and receiver.ident is not None
                             and info.owner is caller.scope.owner)
        done = self.contexts.invoke(info, receiver, site, caller, env)
        if done is not None:
            # an optimizer a helper builds (or returns beside its model) is, for this caller, built
            # here: where the order matters
            result = done.result
            if result.kind == TUPLE:
                result = replace(result, items=tuple(_built_here(item, node) for item in result.items))
            done = replace(done, result=_built_here(result, node))
        return done

    def _protocol_method(self, obj: Value, name: str, node: cst.CSTNode, args, caller, env: Env) -> Optional[Value]:
        """What a dunder method (`__iter__`, `__getitem__`) of an object of this file returns here."""
        info = self.classes.get(obj.cls)
        if info is None:
            return None
        self.ensure_class(info)
        method = info.methods.get(name)
        if method is None:
            return None
        done = self._invoke(method, obj, node, args, caller, env)
        return done.result if done is not None else None

    def iterate(self, obj: Value, node: cst.CSTNode, caller, env: Env) -> Optional[Value]:
        """`for batch in loader:` over an object of this file: one element of its `__iter__`."""
        if obj.cls and not self.defines(obj.cls, "__iter__") and self.is_sequence_class(obj.cls):
            # a `list` subclass of this file: one of the elements appended to it
            return self.contexts.heap.get(obj.ident, SEQUENCE_ITEMS)
        result = self._protocol_method(obj, "__iter__", node, [], caller, env)
        if result is None or result.kind not in (LIST, TUPLE):
            return None
        return caller.element_of(result, node, node)

    def _file_bases(self, info: ClassInfo, depth: int = 0) -> List[str]:
        """The classes of this file a class derives from, nearest first."""
        found = []
        for base in info.node.bases:
            name = dotted_name(base.value)
            if name in self.classes and name != info.name and depth < 8:
                found += [name] + self._file_bases(self.classes[name], depth + 1)
        return found

    def is_sequence_class(self, cls: str) -> bool:
        """Does the class, or a base class of this file, subclass `list`?"""
        info = self.classes.get(cls)
        if info is None:
            return False
        return any(dotted_name(base.value) == "list"
                   for name in [cls] + self._file_bases(info) for base in self.classes[name].node.bases)

    def dataset_item(self, dataset: Value, node: cst.CSTNode, caller, env: Env) -> Optional[Value]:
        """What `dataset[i]` gives for a dataset object of this file (its `__getitem__`), or None."""
        return self._protocol_method(dataset, "__getitem__", node, [caller_arg(Value(kind=HOST))], caller, env)

    def moves_own_input(self, info: ClassInfo) -> bool:
        """Does the class's `forward` move its first input (`data = data.to(self._device)`)?"""
        if info.moves_input is None:
            forward = info.methods.get("forward")
            info.moves_input = forward is not None and self._moves_parameter(info, forward, 1, depth=3)
        return info.moves_input

    def _moves_parameter(self, info: ClassInfo, function: FunctionInfo, index: int, depth: int) -> bool:
        """Does `function` move its parameter at `index` (or a part of it: `inputs["image"].to(dev)`),
        itself or through a method of the class it hands the parameter to (`self.preprocess(inputs)`)?"""
        params = function.parameters()
        if index >= len(params):
            return False
        moved = _input_and_its_elements(function.node.body, params[index].name.value)
        for call in function.calls:
            if is_move_call(call) and root_name(call.func.value, through_attributes=True) in moved:
                return True
            func = call.func
            if depth > 0 and isinstance(func, cst.Attribute) and dotted_name(func.value) == "self":
                method = info.methods.get(func.attr.value)
                handed = [i for i, arg in enumerate(call.args)
                          if arg.keyword is None and not arg.star and dotted_name(arg.value) in moved]
                if method is not None and method is not function and any(
                        self._moves_parameter(info, method, i + 1, depth - 1) for i in handed):
                    return True
        return False

    def call_forward(self, callee: Value, node: cst.Call, args, caller, env: Env) -> Optional[Value]:
        """`model(x)` on a module class of this file: its `forward`, run for this receiver and input
        (its own `__call__`, when the class replaces nn.Module's: CycleGAN's `GANLoss`)."""
        info = self.classes.get(callee.cls)
        if info is None or callee.scatters:
            return None
        self.ensure_class(info)
        forward = info.methods.get("__call__") or info.methods.get("forward")
        if forward is None:
            return None
        done = self._invoke(forward, callee, node, args, caller, env)
        return done.result if done is not None else None

    def note_module_attribute(self, interp: Interpreter, target: cst.Attribute, value: Value, env: Env, statement) -> None:
        info = interp.scope.owner
        name = target.attr.value
        if isinstance(statement, (cst.Assign, cst.AnnAssign)) and isinstance(statement.value, cst.Call) \
                and value.kind in (ANY, OBJECT) and name in self.fields_used_as_objects:
            # (what an unknown call gave may be a module with weights, unless the file only ever uses
            # it as a plain value: `(1.0 - self.label_smoothing) * nll` reads a number from a config)
            info.unknown_submodule = True
        if value.kind == MODULE:
            info.module_assigned.add(name)
        if not interp.recording or name in info.reported or name in info.buffers:
            return
        what = ""
        if _stays_when_module_moves(value):
            what = "tensor"
        elif (value.kind in (LIST, TUPLE) and value.items and all(map(_stays_when_module_moves, value.items))) \
                or _written_tensor_list(value):
            what = "tensors"  # `self.cell_anchors = [generate(s) for s in sizes]`: none of them moves
        elif value.kind in (LIST, TUPLE) and any(
                item.kind == MODULE and item.stateful is not False and item.owner is None
                and not self.registered_elsewhere(item, env.get("self"))
                for item in value.items):
            # (a module another module registers, kept in a list to reference it without registering
            # it twice, `self.rotary = [rotary]`, moves with its owner)
            what = value.cls if value.cls in ("dict", "list") else "tuple"
        written = getattr(statement, "value", None)
        container = ("dict" if isinstance(written, (cst.Dict, cst.DictComp)) else
                     "list" if isinstance(written, (cst.List, cst.ListComp)) else "")
        parameters = bool(container) and (
            (value.kind == BATCH and value.parameter)
            or (value.kind == LIST and any(item.kind == TENSOR and item.parameter for item in value.items)))
        if parameters:  # `{t: nn.Parameter(...) for t in types}`: not registered, not moved
            what = container
        if what in ("list", "tuple", "dict") and _lists_registered_parts(written, info.module_assigned):
            what = ""  # `self.lins = [self.lin0, self.lin1]`: an index of parts registered by name
        if what:
            info.reported.add(name)
            self.facts.unregistered_state.append(
                UnregisteredState(statement, info.name, name, value, what, parameters=parameters))

    @property
    def parameters_shaped(self) -> bool:
        """Does every module of this file get its parameters from `torch.nn` layers (no `Parameter(`
        written here, which could make a 0-dim one such as a temperature)?"""
        if self._parameters_shaped is None:
            self._parameters_shaped = "Parameter(" not in self.source
        return self._parameters_shaped

    def registered_elsewhere(self, module: Value, owner: Optional[Value]) -> bool:
        """Is `module` a submodule of another module of this file than `owner` (a field of it)?"""
        heap = self.contexts.heap
        for holder, _ in heap.holders_of(module.ident):
            info = self.classes.get(heap.class_of(holder) or "")
            if (owner is None or holder != owner.ident) and info is not None and _acts_as_module(info):
                return True
        return False

    def note_container_append(self, interp: Interpreter, receiver: Value, receiver_node, added: Value, node) -> None:
        key = dotted_name(receiver_node)
        info = interp.scope.owner
        if key is None or not key.startswith("self.") or key.count(".") != 1 or not interp.recording:
            return
        name = key[len("self."):]
        # (a submodule met by iterating `self.module.named_modules()` is registered there: this list
        # only indexes it)
        if added.kind == MODULE and added.stateful is not False and added.owner is None and name not in info.reported:
            info.reported.add(name)
            self.facts.unregistered_state.append(
                UnregisteredState(node, info.name, name, added, receiver.cls or "list", receiver.origin))

    def note_container_store(self, interp: Interpreter, target: cst.Subscript, value: Value, env: Env, statement=None) -> None:
        """`self.heads[name] = nn.Linear(...)` on a plain dict in `__init__`; in another method,
        `self.parts[0] = part.to(x.device)` puts a module moved by hand back (no DEV105 then)."""
        owner = interp.scope.owner
        if not interp.scope.in_module_init:
            attribute = _self_attribute_under(target.value)
            assigned = getattr(statement, "value", None)
            if owner is not None and attribute is not None and (
                    is_move_call(assigned) or (value.kind == MODULE and is_move_call(value.origin))):
                self.moved_by_hand.add((owner.name, attribute))
            return
        container = interp.eval(target.value, env)
        if container.kind in (LIST, TUPLE):
            self.note_container_append(interp, container, target.value, value, target)
        assigned = getattr(statement, "value", None)
        if container.kind == MODULE and value.kind == MODULE and isinstance(assigned, cst.Name):
            # `self.feature_modules[name] = module` (an `nn.ModuleDict`): that module is registered,
            # and a plain list that also indexes it (`self.feature_fns.append(module)`) moves with it
            holder = container.ident if container.ident is not None else getattr(env.get("self"), "ident", None)
            if holder is not None:
                env.values[assigned.value] = replace(value, owner=holder)

    def note_self_call(self, interp: Interpreter, receiver_node, method: str) -> None:
        """Calls on `self` or `self.attr` that change what DEV105 may say."""
        owner = interp.scope.owner
        if owner is None:
            return
        if dotted_name(receiver_node) == "self" and method in MANUAL_REGISTRATION:
            owner.registers_manually = True
        elif method in ("to", "cuda", "type_as", "cpu"):
            attribute = _self_attribute_under(receiver_node)
            if attribute is not None:
                self.moved_by_hand.add((owner.name, attribute))

    def note_buffer(self, interp: Interpreter, name_node, tensor: Value, env: Env) -> None:
        if interp.scope.owner is not None:
            interp.scope.owner.registers_buffers = True
        name = string_value(name_node)
        if name is None or interp.scope.owner is None:
            return
        interp.scope.owner.buffers.add(name)
        env.bind("self." + name, Value(kind=TENSOR, device=tensor.device, origin=tensor.origin, via=tensor.via, parameter=True))

    # --- functions ----------------------------------------------------------------

    def reanalyse(self, info: FunctionInfo, seed: Optional[Dict[str, Value]]) -> None:
        """Interpret a function again, recording: its first run was silent."""
        result, final_env = info.result, info.final_env
        info.result = info.final_env = None
        self.analyse(info, seed=seed)
        info.result, info.final_env = result, final_env

    def analyse(self, info: FunctionInfo, seed: Optional[Dict[str, Value]] = None, guarded: bool = False,
                arguments: Optional[Dict[str, Value]] = None, hot: str = "", silent: bool = False) -> Optional[Env]:
        """Interpret a function once; returns its final state (for `__init__`)."""
        if info.result is not None or info.running:
            return info.final_env
        info.running = True
        owner = info.owner
        scope = Scope(owner, info.name, info.outer, frozenset(p.name.value for p in info.parameters()), info.node,
                      self.builds_parts(info))
        # A step function (`loss.backward()` outside any loop) is hot only where a loop calls it: its
        # callers in context, or callers in other files (`hot`); run once (a DDP demo), it is cold.
        interp = Interpreter(self, scope, hot)
        interp.silent += silent
        env = Env(default_device=self.module_env.default_device, guarded=guarded or self.accelerator_only(info))
        self._bind_parameters(info, env, seed)
        for name, value in (arguments or {}).items():
            env.bind(name, value)
        env = interp.exec_block(info.node.body.body, env)
        interp.settle_cuda_calls(env)
        # no return: None
        if interp.yields:  # a generator: iterating it gives what it yields
            info.result = Value(kind=LIST, items=(join_all(interp.yields),), cls="generator")
        elif interp.returns:
            info.result = join_paths(interp.returns, interp.return_paths, interp.returns_guarded)
        else:
            info.result = Value(kind=HOST)
        info.final_env = env
        info.running = False
        return env

    def accelerator_only(self, info: FunctionInfo, called_from_cpu_path: bool = False) -> bool:
        """A test skipped without a GPU, a `*_cuda` helper: it runs only where CUDA is. A name says so
        only while nothing calls it from code that runs on the CPU too, in a file that really chooses
        between the two (an availability test): mmengine's `get_max_cuda_memory()`, called by a
        logger whose runner falls back to the CPU, runs there."""
        if self.module_skipped_without_accelerator:
            return True
        called_from_cpu_path = called_from_cpu_path and self.tests_availability
        texts = [word for d in info.node.decorators for word in _words(d.decorator)]
        if not called_from_cpu_path:
            texts.append(info.name)
        if info.owner is not None:
            texts += [word for d in info.owner.node.decorators for word in _words(d.decorator)]
            # (a class named for CUDA, `CudaGraphRunner`, is CUDA code; one named `Accelerator` or
            # `DistributedTrainer` abstracts over devices and runs on the CPU too)
            if api.is_cuda_class_name(info.owner.name) and not called_from_cpu_path:
                return True
        return any(api.is_accelerator_only_marker(text) or self._asks_availability(text) for text in texts)

    def _asks_availability(self, name: str) -> bool:
        """A module-level flag that holds an availability test (`IS_ROCM = torch.cuda.is_available()
        and torch.version.hip`), as a skip condition names it."""
        value = self.module_env.values.get(name)
        return value is not None and value.source == SOURCE_AVAILABILITY

    def _bind_parameters(self, info: FunctionInfo, env: Env, seed: Optional[Dict[str, Value]]) -> None:
        params = info.parameters()
        owner = info.owner
        decorators = {dotted_name(d.decorator) for d in info.node.decorators}
        if owner is not None and "staticmethod" not in decorators and params:
            first = params.pop(0).name.value
            if "classmethod" in decorators:
                env.bind(first, Value(kind=CLASS, cls=owner.name))
            else:
                self.ensure_class(owner)
                module_like = _acts_as_module(owner)
                building = module_like and (info.name == "__init__" or _builds_submodules(info, owner))
                if building:
                    # a module under construction is where modules are made (the CPU, unless a
                    # default device says otherwise) and one object its own methods see (a shape
                    # probe `self._conv_out(shape)` runs its `self.conv` on that device); so is one
                    # a builder method adds parts to (speechbrain's `model.append(Linear, ...)`, which
                    # runs a dummy input through the new block to learn its shape)
                    env.bind(first, Value(kind=MODULE, device=env.default_device, cls=owner.name,
                                          stateful=owner.stateful, ident=id(info.node)))
                # (the receiver is one object for the whole method, so that `self.helper()` runs in
                # context: `self._get_data()` with its defaults, not the helper's generic summary)
                elif module_like:
                    env.bind(first, Value(kind=MODULE, device=self.self_device(), cls=owner.name, stateful=owner.stateful,
                                          ident=id(info.node)))
                else:
                    env.bind(first, Value(kind=OBJECT, cls=owner.name, ident=id(info.node)))
                attrs = seed if seed is not None else owner.attrs
                for key, value in attrs.items():
                    if module_like and not building:
                        value = self.follows_module(value, owner, self.self_device())
                    if seed is None:
                        value = as_seen_unseeded(key[len("self."):], value, self.rebound_fields)
                    env.values[first + key[len("self"):]] = value
        star = info.node.params.star_arg
        for extra in (star, info.node.params.star_kwarg):
            if isinstance(extra, cst.Param):
                env.bind(extra.name.value, UNKNOWN_VALUE)
        for index, param in enumerate(params):
            env.bind(param.name.value, self._parameter_value(info, index, param))

    def _parameter_value(self, info: FunctionInfo, index: int, param: cst.Param) -> Value:
        owner = info.owner
        if owner is None or owner.is_module is not True:  # a `forward` of a class that may be no module
            return UNKNOWN_VALUE
        annotation = dotted_name(param.annotation.annotation) if param.annotation is not None else None
        device = self.self_device()
        tensor_like = annotation in _TENSOR_ANNOTATIONS or (index == 0 and param.annotation is None)
        if info.name == "forward" and tensor_like and param.default is None:
            return Value(kind=TENSOR, device=device, origin=param)
        if info.name in _LIGHTNING_STEPS and index == 0:
            return Value(kind=BATCH, device=device, origin=param)
        return UNKNOWN_VALUE

    def call_function(self, callee: Value, node: cst.Call, args, guarded: bool = False, recording: bool = True,
                      hot: str = "", caller=None, env: Optional[Env] = None) -> Value:
        """A call of a function of this file: analysed on first call, from that call's point of view
        (its availability guard, and its arguments when it is the only call in the file).  A call met
        while a loop is still being iterated silently waits for the recording pass."""
        info = self.functions.get(id(callee.origin))
        if info is None:
            return UNKNOWN_VALUE
        if info.trains and caller is not None:
            caller.note_step(trains=True)
        if caller is not None and env is not None:
            done = self._invoke(info, None, node, args, caller, env)
            if done is not None:
                return done.result
        if info.result is None and not info.running:
            if not recording:
                return UNKNOWN_VALUE
            self.analyse(info, guarded=guarded, arguments=self._only_call_arguments(info, args), hot=hot)
        return self._specialise(info, info.result, node, args, skip_first=False)

    def uses_of(self, name: str) -> int:
        """How often a top-level name is mentioned in the file, its `def` included."""
        if self._name_uses is None:
            self._name_uses = Counter(_NAME_USE.findall(_without_comments(self.source)))
        return self._name_uses[name]

    def _calls_from_other_files(self, info: FunctionInfo) -> Tuple[Optional[Dict[str, Value]], str]:
        """The arguments of its only call and how hot its callers are, for a function used only elsewhere."""
        if info.owner is not None or info.result is not None or len(info.outer) != 1:
            return None, ""  # methods, nested functions, and functions already analysed from a call here
        if self.uses_of(info.name) != 1:
            return None, ""  # used in this file too
        return self.place.incoming(info.name, info.parameters())

    def _only_call_arguments(self, info: FunctionInfo, args) -> Optional[Dict[str, Value]]:
        """Values the function surely receives: those of its only call in the file."""
        if self.uses_of(info.name) != 2:  # the def and this call
            return None
        names = [p.name.value for p in info.parameters()]
        bound = _bind_arguments(names, args)
        return {name: value for name, value in bound.items() if name in names and _informative(value)}

    def arguments_it_may_move(self, callee: Value, args) -> list:
        """The call's arguments that the function (or constructor) of this file may move (all,
        when unknown). A dataclass or NamedTuple with a generated `__init__` only stores them."""
        if callee.kind == CLASS:
            cls = self.classes.get(callee.cls)
            if cls is not None and _is_record_class(cls.node) and not _has_own_methods(cls.node, _RECORD_HOOKS):
                return []
            return list(args)
        return _arguments_moved_by(self.functions.get(id(callee.origin)), args, bound=False)

    def method_arguments_it_may_move(self, receiver: Value, name: str, args) -> list:
        """Like `arguments_it_may_move`, for `obj.name(...)` on an object of a class of this file:
        a method whose body is read moves or hands on only some of what it is given."""
        info = self.classes.get(receiver.cls)
        if info is None:
            return list(args)
        self.ensure_class(info)
        method = info.methods.get(name)
        if method is None:
            return list(args)
        return _arguments_moved_by(method, args, bound=not method.is_static)

    def syntax_fact(self, node: cst.CSTNode, kind: str, compute):
        """What `compute` says of a node's syntax, worked out once: loops and contexts run the same
        statement many times."""
        key = (id(node), kind)
        if key not in self._syntax_facts:
            self._syntax_facts[key] = compute(node)
        return self._syntax_facts[key]

    def returns_moved_copy(self, cls: str, method: str) -> bool:
        """Does the class's own `to()` build and return another object, leaving itself as it was
        (`ret = Instances(...); ...; return ret`)? Then a call whose result is dropped moves nothing."""
        info = self.classes.get(cls)
        function = info.methods.get(method) if info is not None else None
        if function is None or function.is_static:
            return False
        params = function.parameters()
        if not params:
            return False
        receiver = params[0].name.value
        returns = [n for n in walk(function.node.body) if isinstance(n, cst.Return)]
        writes_itself = any(
            isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and any(
                root_name(t.target if isinstance(n, cst.Assign) else n.target, through_attributes=True) == receiver
                and not isinstance(t.target if isinstance(n, cst.Assign) else n.target, cst.Name)
                for t in (n.targets if isinstance(n, cst.Assign) else [n]))
            for n in walk(function.node.body))
        return bool(returns) and not writes_itself and all(
            r.value is not None and root_name(r.value) != receiver for r in returns)

    def defines(self, cls: str, method: str) -> bool:
        """Does a class of this file (or a base class here) define `method`?"""
        info = self.classes.get(cls)
        if info is None:
            return False
        self.ensure_class(info)
        return method in info.methods

    def lacks_attribute(self, cls: str, attr: str, depth: int = 0) -> bool:
        """Is a class of this file surely without `attr`: no method, field or class attribute of that
        name, no `__getattr__`, and every base either a class of this file that lacks it too or
        `nn.Module` itself?"""
        info = self.classes.get(cls)
        if info is None or depth > 8:
            return False
        if attr in info.methods or "__getattr__" in info.methods or self.assigns_attribute(info, attr):
            return False
        for base in info.node.bases:
            name = dotted_name(base.value)
            if name in self.classes:
                if not self.lacks_attribute(name, attr, depth + 1):
                    return False
            elif name not in api.PLAIN_MODULE_BASES:
                return False
        return True

    @staticmethod
    def assigns_attribute(info, attr: str) -> bool:
        """Does the class body or one of its methods bind `attr` (`module = ...`, `self.module = ...`)?"""
        for node in walk(info.node):
            target = node.target if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) else None
            if isinstance(target, cst.Name) and target.value == attr:
                return True
            if isinstance(target, cst.Attribute) and target.attr.value == attr:
                return True
        return False

    def inherits_unseen(self, cls: str, depth: int = 0) -> bool:
        """Does the class, or a base class of this file, have a base this file does not define?"""
        info = self.classes.get(cls)
        if info is None or depth > 8:
            return False
        for base in info.node.bases:
            name = dotted_name(base.value)
            if name not in self.classes:
                if name != "object":
                    return True
            elif self.inherits_unseen(name, depth + 1):
                return True
        return False

    def call_method(self, receiver: Value, name: str, node: cst.Call, args, caller=None, env: Optional[Env] = None) -> Value:
        """A method of a class of this file; like `call_function`, the first call from a hot loop
        (`self.training_step(batch)`) makes the method hot."""
        if not receiver.cls and receiver.aliases and caller is not None and env is not None:
            return self._call_on_each(receiver, name, node, args, caller, env)
        info = self.classes.get(receiver.cls)
        if info is None:
            return UNKNOWN_VALUE
        self.ensure_class(info)
        method = info.methods.get(name)
        if method is None:
            return UNKNOWN_VALUE
        if method.trains and caller is not None:
            caller.note_step(trains=True)
        if caller is not None and env is not None and receiver.ident is not None:
            done = self._invoke(method, receiver, node, args, caller, env)
            if done is not None:
                return done.result
        if method.result is None and not method.running and caller is not None:
            if not caller.recording:
                return UNKNOWN_VALUE
            self.analyse(method, hot=caller.call_heat)
        self.analyse(method)
        result = self._specialise(method, method.result, node, args, skip_first=True)
        if receiver.kind == MODULE and result.device == self.self_device() and result.device.kind == SYMBOLIC:
            result = replace(result, device=receiver.device)
        return result

    def call_super(self, name: str, node: cst.Call, args, caller, env: Env) -> Optional[Value]:
        """`super().__init__(*args, **kwargs)` in a method of a class of this file whose base is one
        too: the base's method, run on this same object (its fields set here are this object's)."""
        scope = caller.scope
        own = scope.owner.methods.get(scope.method) if scope.owner is not None else None
        if own is None or own.node is not scope.node or own.owner is None:
            return None
        params = own.parameters()
        receiver = env.get(params[0].name.value) if params else None
        if receiver is None or receiver.ident is None:
            return None
        for base in own.owner.node.bases:
            parent = caller.eval(base.value, self.module_env)
            info = self.classes.get(parent.cls) if parent.kind == CLASS else None
            method = self.ensure_class(info).methods.get(name) if info is not None else None
            if method is not None:
                done = self._invoke(method, receiver, node, args, caller, env)
                return done.result if done is not None else None
        return None

    def _class_made_at(self, ident: int) -> Optional[ClassInfo]:
        """The class of this file the allocation site `ident` instantiates (None: not one of ours)."""
        cls = self.contexts.heap.class_of(ident)
        info = self.classes.get(cls) if cls is not None else None
        return self.ensure_class(info) if info is not None else None

    def _methods_of(self, ident: int) -> Dict[str, "FunctionInfo"]:
        info = self._class_made_at(ident)
        return info.methods if info is not None else {}

    def _call_on_each(self, receiver: Value, name: str, node: cst.Call, args, caller, env: Env) -> Value:
        """`for cb in self.callbacks: cb.on_train_start(self)` over objects of several classes: each
        object's own method runs, in the list's order; a class without that method is skipped."""
        results = []
        for ident in receiver.aliases[:_MAX_RECEIVERS]:
            info = self._class_made_at(ident)
            if info is None:
                return UNKNOWN_VALUE  # (one of them is not an object we know)
            if name in info.methods:
                one = Value(kind=receiver.kind, ident=ident, cls=info.name, origin=receiver.origin)
                results.append(self.call_method(one, name, node, args, caller, env))
        return join_all(results) if results else UNKNOWN_VALUE

    def call_class_method(self, cls: Value, name: str, node: cst.Call, args, caller, env: Env) -> Value:
        """A classmethod or staticmethod called on a class of this file, interpreted in context
        (`cls` bound to the class; a static method gets no receiver)."""
        method = self.classes[cls.cls].methods[name]
        decorators = {dotted_name(d.decorator) for d in method.node.decorators}
        if not decorators & {"classmethod", "staticmethod"}:
            return UNKNOWN_VALUE  # (a plain method called through its class: the instance is an argument)
        done = self._invoke(method, cls, node, args, caller, env)
        return done.result if done is not None else UNKNOWN_VALUE

    def _specialise(self, info: FunctionInfo, result: Optional[Value], node: cst.Call, args, skip_first: bool) -> Value:
        if result is None:
            return UNKNOWN_VALUE
        bound = _bind_arguments([p.name.value for p in info.parameters()][1 if skip_first else 0:], args)
        for param in info.parameters():  # `device="cpu"` left to its default
            if param.name.value not in bound:
                default = api.parse_device_string(string_value(param.default) or "") if param.default is not None else None
                bound[param.name.value] = Value(kind=DEVICE, device=default) if default is not None else UNKNOWN_VALUE
        return self._substitute(result, bound, node)

    def _substitute(self, value: Value, bound: Dict[str, Value], node: cst.Call) -> Value:
        if value.items:
            value = replace(value, items=tuple(self._substitute(item, bound, node) for item in value.items))
        if value.device.kind == SYMBOLIC and value.device.key in bound:
            argument = bound[value.device.key]
            device = argument.device if argument.kind in (DEVICE, TENSOR, BATCH, MODULE) else UNKNOWN
            value = replace(value, device=device)
        if value.kind in (MODULE, OPTIMIZER) and value.ident is not None:
            # each call makes new objects; an optimizer returned beside its model keeps pointing at it
            value = replace(value, ident=hash((id(node), value.ident)))
        elif value.kind == MODULE:
            value = replace(value, ident=id(node))
        return value


def _built_here(value: Value, call: cst.Call) -> Value:
    if value.kind != OPTIMIZER or value.origin is None:
        return value
    return replace(value, origin=call, state_at=call if value.state_at is not None else None)


def _drop_repeated_facts(facts: FileFacts) -> None:
    """A statement interpreted in several contexts records the same fact more than once: keep the first."""
    for name in facts.__dataclass_fields__:
        items = getattr(facts, name)
        if not isinstance(items, list):
            continue
        seen, kept = set(), []
        for fact in items:
            key = _fact_key(fact)
            if key not in seen:
                seen.add(key)
                kept.append(fact)
        setattr(facts, name, kept)


def _fact_key(fact) -> tuple:
    """Where a fact is (its first node) and what it says there (its plain fields)."""
    if not dataclasses.is_dataclass(fact):
        return (id(fact),)
    values = [getattr(fact, f.name) for f in dataclasses.fields(fact)]
    plain = tuple(v for v in values[1:] if isinstance(v, (str, int, bool)))
    return (id(values[0]) if values else None, type(fact).__name__) + plain


def _builds_submodules(info: FunctionInfo, owner: "ClassInfo") -> bool:
    """A method other than `forward` that registers new parts: `self.add_module(...)`, or
    `self.blocks.append(...)` on a module container. It runs while the model is being built.
    (Decided once per method: it is asked at every run of it.)"""
    if info.builds_parts is None:
        info.builds_parts = info.name != "forward" and _registers_parts(info, owner)
    return info.builds_parts


def _registers_parts(info: FunctionInfo, owner: "ClassInfo") -> bool:
    for call in info.calls:
        func = call.func
        if not isinstance(func, cst.Attribute):
            continue
        receiver = dotted_name(func.value)
        if receiver == "self" and func.attr.value in MANUAL_REGISTRATION:
            return True
        if func.attr.value in ("append", "extend", "insert") and receiver is not None and receiver.count(".") == 1 \
                and receiver.startswith("self.") and getattr(owner.attrs.get(receiver), "kind", None) == MODULE:
            return True
    return False


def _lists_registered_parts(written, registered) -> bool:
    """`[self.lin0, self.lin1]` (or a dict of them) where each is a submodule this class set by name."""
    if isinstance(written, (cst.List, cst.Tuple)):
        items = [element.value for element in written.elements]
    elif isinstance(written, cst.Dict):
        items = [element.value for element in written.elements if isinstance(element, cst.DictElement)]
    else:
        return False
    return bool(items) and all(
        isinstance(item, cst.Attribute) and isinstance(item.value, cst.Name) and item.value.value == "self"
        and item.attr.value in registered for item in items)


def _returned_expression(function: cst.FunctionDef) -> Optional[cst.BaseExpression]:
    """What a function whose whole body is `return <expression>` (a docstring aside) returns."""
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    statements = [line for line in body if not (isinstance(line, cst.SimpleStatementLine) and
                                                 isinstance(line.body[0], cst.Expr))]  # (a docstring)
    if len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine):
        return None
    statement = statements[0].body[0]
    return statement.value if isinstance(statement, cst.Return) else None


def _answers_interval_test(function: cst.FunctionDef) -> bool:
    returned = _returned_expression(function)
    return returned is not None and is_interval_test(returned)


def _answers_wrapper_test(function: cst.FunctionDef) -> bool:
    """`def is_parallel(model): return type(model) in (DataParallel, DDP)`: true for a wrapper."""
    returned = _returned_expression(function)
    params = function.params.params
    if returned is None or not params:
        return False
    return any(isinstance(expr, cst.Name) and expr.value == params[0].name.value and holds
               for expr, holds in wrapper_tests(returned))


def _offers_cpu_path(node: cst.CSTNode) -> bool:
    """The syntax `api.CPU_PATH_TEXT` looks for in text: an availability or device-count call, a
    "cpu" literal, a test of `.type` or `.is_cuda`, `torch.accelerator`."""
    kind = type(node)
    if kind is cst.Call:
        return last_identifier(node.func) in api.CPU_PATH_CALLS
    if kind is cst.SimpleString:
        return string_value(node) == "cpu"
    if kind is cst.Attribute:
        return node.attr.value == "is_cuda" or dotted_name(node) == "torch.accelerator"
    if kind is cst.Comparison:
        return any(isinstance(target.operator, (cst.Equal, cst.NotEqual)) for target in node.comparisons) and any(
            isinstance(side, cst.Attribute) and side.attr.value == "type"
            for side in [node.left] + [target.comparator for target in node.comparisons])
    return False


#: methods through which a record class's construction runs code of its own
_RECORD_HOOKS = frozenset({"__init__", "__post_init__", "__new__"})


def _has_own_methods(node: cst.ClassDef, names) -> bool:
    return any(isinstance(item, cst.FunctionDef) and item.name.value in names for item in node.body.body)


def _is_record_class(node: cst.ClassDef) -> bool:
    """`@dataclass` (`@dataclasses.dataclass(...)`) or a `NamedTuple` subclass."""
    for decorator in node.decorators:
        target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        if (dotted_name(target) or "").rsplit(".", 1)[-1] == "dataclass":
            return True
    return any((dotted_name(base.value) or "").rsplit(".", 1)[-1] == "NamedTuple" for base in node.bases)


def _record_fields(node: cst.ClassDef, args) -> Dict[str, Value]:
    """Field name -> the argument a generated `__init__` stores there (positions, then keywords)."""
    names = [statement.target.value for line in node.body.body if isinstance(line, cst.SimpleStatementLine)
             for statement in line.body
             if isinstance(statement, cst.AnnAssign) and isinstance(statement.target, cst.Name)
             and not _is_class_variable(statement.annotation.annotation)]
    positional = [arg.value for arg in args if arg.keyword is None and not arg.node.star]
    fields = dict(zip(names, positional))
    fields.update({arg.keyword: arg.value for arg in args if arg.keyword in names})
    return fields


def _is_class_variable(annotation: cst.BaseExpression) -> bool:
    """`ClassVar[int]`: no field of a dataclass."""
    head = annotation.value if isinstance(annotation, cst.Subscript) else annotation
    return (dotted_name(head) or "").rsplit(".", 1)[-1] == "ClassVar"


def _node_of(info: FunctionInfo) -> cst.FunctionDef:
    return info.node


def _calls_of(info: FunctionInfo) -> List[cst.Call]:
    return info.calls


def _called_by_name(call: cst.Call) -> Tuple[str, ...]:
    """`helper(x)` may call the file's function `helper`."""
    return (call.func.value,) if isinstance(call.func, cst.Name) else ()


def _called_on_self(call: cst.Call) -> Tuple[str, ...]:
    """`self.step(x)` may call a method `step` (of this class or another one that has it)."""
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        return (func.attr.value,)
    return ()




def _words(expression: cst.BaseExpression) -> List[str]:
    """The identifiers and strings of an expression (a decorator), without generating its code."""
    words = []
    for node in sub_expressions(expression):
        if isinstance(node, cst.Name):
            words.append(node.value)
        elif isinstance(node, cst.Attribute):
            words.append(node.attr.value)
        elif isinstance(node, cst.SimpleString):
            words.append(node.value)
    return words


#: A comment after code and quoted strings on one line (close enough for counting names).
_COMMENT = re.compile(r"""^((?:[^'"#\n]|'[^'\n]*'|"[^"\n]*")*)#.*$""", re.MULTILINE)


def _without_comments(source: str) -> str:
    """The source with its comments cut (a comment naming a function is no use of it)."""
    return _COMMENT.sub(r"\1", source)


#: A name as used in code: not an attribute (`x.train`), not a keyword argument (`train=True`).
_NAME_USE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\b(?!\s*=(?!=))")


def _bind_arguments(names: List[str], args) -> Dict[str, Value]:
    """A call's argument values by parameter name: positional ones in order, then keywords."""
    bound: Dict[str, Value] = {}
    for position, arg in enumerate(a for a in args if a.keyword is None and not a.node.star):
        if position < len(names):
            bound[names[position]] = arg.value
    bound.update((arg.keyword, arg.value) for arg in args if arg.keyword is not None)
    return bound


def _informative(value: Value) -> bool:
    """An argument worth binding to a parameter: a model, a loader, a placed tensor, a device."""
    if value.kind in (MODULE, LOADER, OPTIMIZER):
        return True
    return value.kind in (DEVICE, TENSOR, BATCH) and value.device.known


def _acts_as_module(info: ClassInfo) -> bool:
    """A module class, or one with unknown bases that has a `forward` or moves itself (`self.to(...)`,
    flair's embeddings): assumed a module, the silent choice. With unknown bases and neither, it
    is a processor or a helper object."""
    if info.is_module is not None:
        return info.is_module
    if info.moves_itself is None:
        info.moves_itself = any(
            isinstance(call.func, cst.Attribute) and call.func.attr.value in api.MOVE_METHODS
            and isinstance(call.func.value, cst.Name) and call.func.value.value == "self"
            for method in info.methods.values() for call in method.calls)
    return "forward" in info.methods or info.moves_itself


def _follows_input(info: ClassInfo) -> bool:
    """Does the class's own `forward` move the module, or a part of it, to where an input is
    (`self.to(x.device)`, `self.resampler.to(waveforms.device)`)? Found once per class."""
    if info.follows_input is None:
        info.follows_input = _forward_moves_self_to_input(info)
    return info.follows_input


def _forward_moves_self_to_input(info: ClassInfo) -> bool:
    forward = info.methods.get("forward")
    if forward is None or forward.owner is not info:
        return False
    inputs = {param.name.value for param in forward.parameters()[1:]}
    for call in forward.calls:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in api.MOVE_METHODS and call.args):
            continue
        receiver = func.value
        on_self = (isinstance(receiver, cst.Name) and receiver.value == "self") or (
            isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self")
        if on_self and any(isinstance(n, cst.Name) and n.value in inputs for n in sub_expressions(call.args[0].value)):
            return True
    return False


def _self_attribute_under(node: cst.BaseExpression) -> Optional[str]:
    """`self.pe.detach().type_as` -> "pe": the attribute a method chain starts from."""
    while True:
        if isinstance(node, cst.Call):
            node = node.func
        elif isinstance(node, cst.Attribute):
            if isinstance(node.value, cst.Name) and node.value.value == "self":
                return node.attr.value
            node = node.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            return None


def _imports_gpu_only_package(module: cst.Module) -> bool:
    """`import triton`, `from vllm import LLM` at the top of the file, outside any `try`; or under a
    top-level test that the package is there (`if is_megatron_lm_available(): from megatron...`):
    an integration whose code runs only where the package, and so CUDA, is."""
    statements = list(module.body)
    statements += [inner for statement in module.body if isinstance(statement, cst.If)
                   for inner in statement.body.body]
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                roots = [(dotted_name(alias.name) or "").split(".", 1)[0] for alias in small.names]
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                roots = [(dotted_name(small.module) or "").split(".", 1)[0]]
            else:
                continue
            if any(root in api.GPU_ONLY_PACKAGES for root in roots):
                return True
    return False


def _skipped_without_accelerator(module: cst.Module) -> bool:
    """`if not torch.cuda.is_available(): pytest.skip(..., allow_module_level=True)`, or
    `pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), ...)`, at the top of a module."""
    for statement in module.body:
        if isinstance(statement, cst.If) and api.AVAILABILITY_TEXT.search(module.code_for_node(statement.test)):
            if any(_skips_module(node) for node in walk(statement.body)):
                return True
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and dotted_name(small.targets[0].target) == "pytestmark"):
                    text = module.code_for_node(small.value)
                    if "skipif" in text and api.AVAILABILITY_TEXT.search(text):
                        return True
    return False


def _setup_refuses_cpu(module: cst.Module) -> bool:
    """A function that sets the process up (`init_process_group`, `torch.cuda.set_device`) and raises
    on the branch of an availability test where CUDA is missing."""
    return any(
        any(isinstance(n, cst.Call) and last_identifier(n.func) in api.PROCESS_SETUP_CALLS for n in nodes)
        and any(isinstance(n, cst.If) and _raises_without_cuda(module, n) for n in nodes)
        for nodes in _nodes_by_function(module))


def _nodes_by_function(module: cst.Module) -> Iterator[List[cst.CSTNode]]:
    """The nodes of each function's own body, nested functions apart: every node is visited once."""
    functions = [node for node in module.body if isinstance(node, cst.FunctionDef)]
    pending = [node for node in module.body if not isinstance(node, cst.FunctionDef)]
    while pending:  # functions outside any function (in classes, under `if`s)
        node = pending.pop()
        if isinstance(node, cst.FunctionDef):
            functions.append(node)
        else:
            pending.extend(child_nodes(node))
    while functions:
        own, pending = [], list(child_nodes(functions.pop().body))
        while pending:
            node = pending.pop()
            if isinstance(node, cst.FunctionDef):
                functions.append(node)
                continue
            own.append(node)
            pending.extend(child_nodes(node))
        yield own


def _raises_without_cuda(module: cst.Module, node: cst.If) -> bool:
    """`if torch.cuda.is_available(): ... else: raise ...` or `if not ...is_available(): raise ...`."""
    if not api.AVAILABILITY_TEXT.search(module.code_for_node(node.test)):
        return False
    negated = isinstance(node.test, cst.UnaryOperation) and isinstance(node.test.operator, cst.Not)
    branch = node.body if negated else getattr(node.orelse, "body", None)
    return isinstance(branch, cst.IndentedBlock) and any(
        isinstance(small, cst.Raise) for line in branch.body
        if isinstance(line, cst.SimpleStatementLine) for small in line.body)


def _skips_module(node: cst.CSTNode) -> bool:
    """`pytest.skip(..., allow_module_level=True)` or `raise unittest.SkipTest(...)`."""
    if isinstance(node, cst.Call) and (dotted_name(node.func) or "").endswith("skip"):
        return any(a.keyword is not None and a.keyword.value == "allow_module_level" for a in node.args)
    return isinstance(node, cst.Raise) and "SkipTest" in (dotted_name(getattr(node.exc, "func", node.exc)) or "")


def _input_and_its_elements(body: cst.CSTNode, name: str) -> Set[str]:
    """The input's name and the names a comprehension or loop over it binds (`(t.to(dev) for t in
    batch)`, `{k: v.to(dev) for k, v in batch.items()}`): moving those moves the input."""
    names = {name}
    for node in walk(body):
        source = node.iter if isinstance(node, (cst.CompFor, cst.For)) else None
        if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) \
                and source.func.attr.value in ("items", "values"):
            source = source.func.value
        if source is not None and dotted_name(source) == name:
            names.update(n.value for n in walk(node.target) if isinstance(n, cst.Name))
    return names


def _arguments_moved_by(info: Optional["FunctionInfo"], args, bound: bool) -> list:
    """The arguments a call of `info` may move (all, when unknown); `bound`: the first parameter is
    the receiver, not one of `args`."""
    if info is None or isinstance(info.node.params.star_arg, cst.Param) or info.node.params.star_kwarg is not None:
        return list(args)
    names = [p.name.value for p in info.parameters()][1 if bound else 0:]
    handled = info.handled_parameters
    chosen = []
    for position, arg in enumerate(a for a in args if a.keyword is None):
        if arg.node.star or position >= len(names) or names[position] in handled:
            chosen.append(arg)
    chosen += [a for a in args if a.keyword is not None and (a.keyword in handled or a.keyword not in names)]
    return chosen
