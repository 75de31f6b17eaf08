"""Functions and classes of torch and of the libraries around it, by qualified name.

`FUNCTIONS` answers a call such as `torch.zeros(...)`, `nn.DataParallel(model)` or
`np.stack(frames)` once the interpreter knows the callee's qualified name and that it is
no function of the project. The tables of names live in `torch_api`; the handlers here
say what a call of each family gives and which facts it records.
"""
from __future__ import annotations

from dataclasses import replace
from typing import List, Optional, Sequence, Tuple

import libcst as cst

from .. import torch_api as api
from ..call_args import Arg
from ..device_choice import PER_RANK
from ..state_dicts import checkpoint_key, reloaded
from ..facts import (
    LOAD_WITHOUT_MAP_LOCATION, UNGUARDED_CUDA_API, DeviceIdsMismatch, MoveBeforeWrap, Operand, ParallelOnCpu,
)
from ..lattice import (
    ANY, BATCH, CLASS, CPU, CUDA, DATASET, DEVICE, DISTRIBUTION, FUNCTION, HOST, LIST, LOADER, METHOD, MODULE, OBJECT, OPTIMIZER, REF,
    SELECTED, SOURCE_AVAILABILITY, SOURCE_CURRENT_DEVICE, SOURCE_DEVICE_AWARE, SOURCE_LOAD, SOURCE_LOADER,
    RANGE, SOURCE_MIXED, SYMBOLIC, TENSOR, TOKENIZER, TUPLE, UNGUARDED, UNKNOWN, UNKNOWN_VALUE, Device, Value, join_all,
    PATH, current_gpu_after, keyed_dict, literal_of,
)
from ..names import dotted_name, integer_value, string_value
from ..value_queries import host_data, is_move_call, replaced_part
from .builtins import dict_
from .registry import ApiCall, Registry

FUNCTIONS = Registry("torch and library functions")

# `OrderedDict()`, `OrderedDict(pairs)`: what `dict(...)` gives
FUNCTIONS.on(api.DICT_CONSTRUCTORS)(dict_)


def _torch(names) -> List[str]:
    return [f"torch.{name}" for name in names]


# --- devices and the accelerator ---------------------------------------------------------

@FUNCTIONS.on(api.AVAILABILITY_CHECKS)
def availability_check(call: ApiCall) -> Value:
    return Value(kind=HOST, source=SOURCE_AVAILABILITY)


@FUNCTIONS.on(api.SELECTED_DEVICE_CALLS)
def selected_device(call: ApiCall) -> Value:
    return Value(kind=DEVICE, device=Device(SELECTED), origin=call.node)


@FUNCTIONS.on(api.DEVICE_CONSTRUCTORS)
def make_device(call: ApiCall) -> Value:
    """`torch.device("cuda", local_rank)`: a device value, an index when one is given."""
    positional = [a for a in call.args if a.keyword is None]
    if not positional:
        return Value(kind=DEVICE, origin=call.node)
    first = positional[0]
    device = first.value.device if first.value.kind == DEVICE else UNKNOWN
    if device.known and len(positional) > 1:
        index = integer_value(positional[1].node.value)
        constant = literal_of(positional[1].value)
        if index is None and isinstance(constant, int) and not isinstance(constant, bool):
            index = constant  # `torch.device("cuda", self.main_gpu)`, a known constant
        # ("cuda", local_rank) is each process's own GPU; ("cuda", current_device()) is whichever is current
        per_rank = index is None and positional[1].value.source != SOURCE_CURRENT_DEVICE
        device = replace(device, index=index, key=PER_RANK if per_rank else "")
    if device.root is not None:  # `torch.device("cuda")` as a whole is the request
        device = replace(device, root=call.node)
    return Value(kind=DEVICE, device=device, origin=call.node)


@FUNCTIONS.on(api.GRADIENT_NORMS)
def gradient_norm(call: ApiCall) -> Optional[Value]:
    """`clip_grad_norm_(model.parameters(), 1.0)`: the total norm, a 0-dim tensor where the parameters are."""
    if not call.args or call.args[0].keyword is not None:
        return None
    device = _owning_module(call.first).device
    if not device.known:
        element = call.ev.element_of(call.first, call.args[0].node.value, call.node)
        device = element.device if element.kind in (TENSOR, BATCH) else UNKNOWN
    return Value(kind=TENSOR, device=device, origin=call.node, scalar=True) if device.known else None


@FUNCTIONS.on(api.SET_DEFAULT_DEVICE)
def set_default_device(call: ApiCall) -> Value:
    env = call.env
    env.default_device = call.ev.placement(call.args[0], call.node, env) or UNKNOWN if call.args else UNKNOWN
    return Value(kind=HOST)


@FUNCTIONS.on(api.SET_DEFAULT_TENSOR_TYPE)
def set_default_tensor_type(call: ApiCall) -> Value:
    """`torch.set_default_tensor_type(torch.cuda.HalfTensor)`: every factory after it makes CUDA
    tensors, and the call itself raises where there is no CUDA."""
    first = call.first
    device = (api.tensor_type_device(first.cls) or UNKNOWN) if first.kind == REF else UNKNOWN
    if first.kind == REF and device.kind == CUDA and call.args:
        device = _cuda_type_request(call, device, first)
    call.env.default_device = device
    return Value(kind=HOST)


@FUNCTIONS.on(api.CUDA_ONLY_APIS)
def cuda_only(call: ApiCall) -> Value:
    """`torch.cuda.synchronize()`, `set_device(i)`...: fails where there is no GPU unless guarded."""
    ev, env = call.ev, call.env
    if call.name in api.SET_DEVICE:
        ev.program.facts.distributed.set_device = True
        index = ev.device_argument(call.args[0].node.value, call.first, env) if call.args else None
        env.current_gpu = current_gpu_after(index)
    # (`with torch.cuda.stream(stream):` with `stream = torch.cuda.Stream() if use_cuda else None`
    # does nothing where there is no GPU: the stream is None there)
    no_op = call.name in api.NO_OP_GIVEN_NONE and (call.first.literal == (None,) or (
        call.first.nullable and call.first.source == SOURCE_AVAILABILITY))
    if not env.guarded and not no_op:
        ev.record_misuse(call.node, UNGUARDED_CUDA_API, call.name)
        ev.unguarded_cuda_calls.append(call.node)
    return Value(kind=HOST, source=SOURCE_CURRENT_DEVICE if call.name in api.CURRENT_DEVICE_CALLS else "")


@FUNCTIONS.on(api.DEVICE_BOUND_OBJECTS)
def device_bound_object(call: ApiCall) -> Value:
    """`torch.Generator(device)`: no tensor, but made on that device (noted like any placement)."""
    device = call.keyword("device")
    if device is None:
        positional = [a for a in call.args if a.keyword is None and not a.node.star]
        position = api.DEVICE_BOUND_OBJECTS[call.name]
        device = positional[position] if len(positional) > position else None
    if device is not None:
        call.ev.placement(device, call.node, call.env)
    return Value(kind=HOST, cls=call.name)


@FUNCTIONS.on(api.PROCESS_GROUP_INIT)
def init_process_group(call: ApiCall) -> Value:
    evidence = call.ev.program.facts.distributed
    world_size = call.keyword("world_size")
    if world_size is not None and literal_of(world_size.value) == 1:
        return Value(kind=HOST)  # a group of one process (a test's in-process group): no ranks to place
    evidence.setup = evidence.setup or call.node
    backend = call.keyword("backend")
    if backend is None and call.args and call.args[0].keyword is None:
        backend = call.args[0]
    if backend is not None and (string_value(backend.node.value) or "").startswith("nccl"):
        evidence.requires_accelerator = True
    return Value(kind=HOST)


@FUNCTIONS.on(api.ENVIRONMENT_SETTERS)
def environment_setter(call: ApiCall) -> Optional[Value]:
    """`os.environ.update({...})`, `os.putenv(k, v)`: each key written."""
    if not call.args:
        return None
    first = call.args[0].node.value
    keys = [e.key for e in first.elements if isinstance(e, cst.DictElement)] if isinstance(first, cst.Dict) else [first]
    for key in keys:
        call.ev.note_environment_write(key, call.node)
    return Value(kind=HOST)


# --- tensors ------------------------------------------------------------------------------

@FUNCTIONS.on(_torch(api.COPYING_FACTORIES))
def copy_of_host_work(call: ApiCall) -> None:
    """`torch.tensor(arr)` of data numpy worked on this step: that work is the step's preprocessing."""
    first = call.first
    if first.kind == HOST and first.host_work is not None:
        call.ev.note_host_work(call.args[0].node.value, first, call.node)


@FUNCTIONS.on(_torch(api.FACTORIES))
def factory(call: ApiCall) -> Value:
    return _factory(call, call.env.default_device)


@FUNCTIONS.on(_torch(api.LIKE_FACTORIES))
def like_factory(call: ApiCall) -> Value:
    return _factory(call, call.first.device if call.args else UNKNOWN)


def _factory(call: ApiCall, default: Device) -> Value:
    """A new tensor: on `device=` when given, else on `default`."""
    name, node, args, env = call.short_name, call.node, call.args, call.env
    device_kw = call.keyword("device")
    device = default
    if device_kw is not None:
        device = call.ev.placement(device_kw, node, env) or UNKNOWN
    # `torch.rand(n, **tkwargs)`: a device may be in there
    # (`device=device` with the caller's `device=None` is no device: the default one)
    given = (device_kw is not None and device_kw.value.literal != (None,)) or any(a.node.star == "**" for a in args)
    if given and device_kw is None:
        device = UNKNOWN
    scalar: Optional[bool] = False
    if name in api.SCALAR_FACTORIES and not given and args and args[0].value.kind in (TENSOR, BATCH):
        return replace(args[0].value, kind=TENSOR, origin=node)  # `torch.as_tensor(t)` stays where t is
    data = args[0].value if args and args[0].keyword is None else UNKNOWN_VALUE
    # host data of this step (not a batch the loader made: that one is reported as preprocessing)
    host_copy = (name in api.COPYING_FACTORIES and not given and host_data(data)
                 and data.source != SOURCE_LOADER and data.literal is None)
    if name in api.COPYING_FACTORIES and _empty_data(args):
        return _placeholder(node)
    if name in api.SCALAR_FACTORIES:
        scalar = _scalar_data(args)
    elif name in api.LIKE_FACTORIES and args:
        scalar = args[0].value.scalar
    elif _empty_shape(args):
        return _placeholder(node)
    elif args and isinstance(args[0].node.value, cst.Tuple) and not args[0].node.value.elements:
        scalar = True  # `torch.zeros(())`: a 0-dim tensor
    if not given and device.is_cpu:
        call.ev.note_host_factory(node, env)
    return Value(kind=TENSOR, device=device, origin=node, source=call.ev.factory_source,
                 scalar=scalar, explicit_device=given, host_copy=host_copy)


def _scalar_data(args: Sequence[Arg]) -> Optional[bool]:
    """Is `torch.tensor(data)` 0-dim? A number literal is; a list or tuple is not; else unknown."""
    data = args[0].node.value if args else None
    if isinstance(data, (cst.Integer, cst.Float)) or (
            isinstance(data, cst.UnaryOperation) and isinstance(data.expression, (cst.Integer, cst.Float))):
        return True
    if isinstance(data, cst.Name) and data.value in ("True", "False"):
        return True
    if args[0].value.kind == HOST and args[0].value.cls in ("int", "float"):
        return True  # `torch.tensor(seen)` with `seen` a count bound by the call
    if not isinstance(data, (cst.List, cst.Tuple, cst.ListComp)) and args[0].value.kind not in (LIST, TUPLE):
        return None  # (a Python list or tuple, however it got here, makes at least one dimension)
    return False


def _cuda_type_request(call: ApiCall, device: Device, named: Value) -> Device:
    """A legacy CUDA tensor type used here (`torch.cuda.HalfTensor`) asks for CUDA as `"cuda"` does:
    where it was named with no fallback, that request; else one at this call, under its guard."""
    if named.device.kind != UNGUARDED:
        device = call.ev.accelerator_literal(device, call.env, call.node)
    else:
        device = named.device
    call.ev.note_placement(device, None, call.node, call.env)
    return device


@FUNCTIONS.when(lambda name: api.tensor_type_device(name) is not None)
def legacy_tensor_type(call: ApiCall) -> Value:
    """`torch.FloatTensor(n)` on the CPU, `torch.cuda.FloatTensor(n)` on the GPU."""
    if not call.args:
        return _placeholder(call.node)
    device = api.tensor_type_device(call.name)
    if device is not None and device.kind == CUDA:  # `torch.cuda.FloatTensor(n)` needs CUDA as `"cuda"` does
        device = _cuda_type_request(call, device, call.callee)
    return Value(kind=TENSOR, device=device, origin=call.node, scalar=False, source=call.ev.factory_source)


@FUNCTIONS.on(api.IDENTITY_WRAPPERS, api.PASS_THROUGH_ITERATORS)
def identity(call: ApiCall) -> Value:
    return call.first


@FUNCTIONS.on(api.PARTIALS)
def partial(call: ApiCall) -> Optional[Value]:
    """`functools.partial(torch.optim.NAdam, lr=2e-3)`: called, it makes what that class makes (only
    keywords may be bound ahead of a library callable: bound positions would shift the arguments of
    the later call). A function of the project keeps the bound arguments, and gets them when called."""
    if not call.args or call.args[0].keyword is not None or any(a.node.star for a in call.args):
        return None
    if call.first.kind in (FUNCTION, CLASS, METHOD):
        return replace(call.first, bound=call.first.bound + tuple(call.args[1:]))
    if any(a.keyword is None for a in call.args[1:]):
        return None
    return call.first if call.first.kind == REF else None


@FUNCTIONS.on(api.COPIES)
def copied(call: ApiCall) -> Optional[Value]:
    """`copy.deepcopy(model)`: another module with its own parameters, where the original is now; a
    later move of the original leaves it behind. A tensor's copy is where the tensor is."""
    original = call.first
    if len(call.args) != 1 or original.kind not in (MODULE, TENSOR):
        return None
    ident = id(call.node) if original.kind == MODULE else None
    if ident is not None:
        call.ev.note_created(ident)
    # (a module's copy got its place here, where the original was at this moment)
    origin = call.node if original.kind == MODULE else original.origin or call.node
    return replace(original, ident=ident, owner=None, aliases=(), alternatives=(), parameter=False,
                   origin=origin, scatters="" if original.kind == TENSOR else original.scatters)


@FUNCTIONS.on(api.DATACLASS_FIELDS)
def dataclass_field(call: ApiCall) -> Optional[Value]:
    """`field(default=x)` is x; `field(default_factory=lambda: make())` is what the factory makes."""
    default = call.keyword("default")
    if default is not None:
        return default.value
    factory = call.keyword("default_factory")
    if factory is None:
        return None
    expr = factory.node.value
    if isinstance(expr, cst.Lambda) and not expr.params.params and not expr.params.kwonly_params:
        return call.ev.eval(expr.body, call.env)
    return None


@FUNCTIONS.on(api.TORCH_LOAD)
def torch_load(call: ApiCall) -> Value:
    """`torch.load(f)`: tensors on the device `map_location` names, or where they were saved from."""
    ev, node, args, env = call.ev, call.node, call.args, call.env
    location = call.keyword("map_location")
    if location is None:
        positional = [a for a in args if a.keyword is None]
        location = positional[1] if len(positional) > 1 else None
    if location is not None and location.value.literal == (None,):
        location = None  # `map_location=None`, or a helper's `map_location=None` default its caller left alone
    device = UNKNOWN  # without map_location tensors return to the device they were saved from
    source = ev.program.module.code_for_node(args[0].node.value) if args else ""
    if location is None:
        # (a test suite reads back what it wrote, on the machine it runs on)
        if not env.guarded and not api.HOST_STATE_FILE.search(source) and not ev.program.place.is_test_module:
            ev.record_misuse(node, LOAD_WITHOUT_MAP_LOCATION, "torch.load", ev.chosen_device_in_scope(env))
            if api.CHECKPOINT_FILE.search(source) or api.CHECKPOINT_FILE.search(ev.scope.method):
                # (`load_checkpoint(path)`: its callers, maybe in other files, restore what it reads)
                ev.program.facts.requirements.device_state_loads.add(id(node))
    else:
        # (`map_location="cuda"` asks for CUDA as `.to("cuda")` does: noted for the portability rules)
        device = ev.placement(location, node, env) or UNKNOWN
    loaded = Value(kind=BATCH, device=device, origin=node, source=SOURCE_LOAD)
    saved = ev.program.contexts.heap.saved_files.get(checkpoint_key(args[0])) if args else None
    return reloaded(saved, loaded) if saved is not None else loaded


@FUNCTIONS.on(api.PATH_BUILDERS)
def path_builder(call: ApiCall) -> Value:
    """`os.path.join(out_dir, "best.pt")`: a path, known by where it was built."""
    return Value(kind=HOST, origin=call.node, cls=PATH)


@FUNCTIONS.on(api.TORCH_SAVE)
def torch_save(call: ApiCall) -> Value:
    """`torch.save(obj, f)`: the file holds obj's structure (state dicts and whose keys they carry)."""
    positional = [a for a in call.args if a.keyword is None]
    target = call.keyword("f") or (positional[1] if len(positional) > 1 else None)
    if positional and target is not None:
        key = checkpoint_key(target)
        if key:
            call.ev.program.contexts.heap.saved_files[key] = positional[0].value
    return Value(kind=HOST)


@FUNCTIONS.when(api.is_distribution)
def distribution(call: ApiCall) -> Value:
    """A distribution over tensor parameters: a tensor where they are (`Normal(0., 1.)`: 0-dim on the CPU)."""
    values = [a.value for a in call.args if a.keyword not in ("validate_args", "event_dims")]
    if any(v.kind not in (TENSOR, HOST) or (v.kind == HOST and v.literal is None) for v in values):
        return UNKNOWN_VALUE  # (parameters the analysis does not know, or a base distribution and transforms)
    shaped = [v for v in values if v.kind == TENSOR and v.scalar is not True]
    devices = {v.device for v in shaped}
    if not shaped:
        return Value(kind=TENSOR, device=CPU, origin=call.node, scalar=True, cls=DISTRIBUTION)
    if len(devices) != 1 or not shaped[0].device.known:
        return UNKNOWN_VALUE
    return Value(kind=TENSOR, device=shaped[0].device, origin=call.node, scalar=False, cls=DISTRIBUTION)


# --- data ----------------------------------------------------------------------------------

def _may_hold_device_tensors(dataset: Value, depth: int = 0) -> bool:
    """Does a dataset hold tensors that may already be on an accelerator? A list of slices of tensors
    the function was handed (`[[train_X[i], train_y[i]] for i ...]`) may: pinning them would fail."""
    if any(item.device.is_accelerator or item.device.kind == SYMBOLIC for item in dataset.items):
        return True
    if dataset.kind not in (LIST, TUPLE) or depth > 3:
        return False
    return any((item.kind in (TENSOR, BATCH) and not item.device.is_cpu) or _may_hold_device_tensors(item, depth + 1)
               for item in dataset.items)


@FUNCTIONS.on(api.DATA_LOADERS)
def data_loader(call: ApiCall) -> Value:
    """A loader's batches are where its dataset's samples are (on the CPU unless they are made elsewhere)."""
    ev, node, args, env = call.ev, call.node, call.args, call.env
    dataset = args[0].value if args and args[0].keyword is None else UNKNOWN_VALUE
    if not _may_hold_device_tensors(dataset):
        # (a dataset holding device tensors cannot be pinned nor served by workers)
        ev.program.loader_options[id(node)] = (_literal_option(call, "pin_memory"), _literal_option(call, "num_workers"))
    if dataset.kind == OBJECT and not dataset.cls:  # one of several classes by path: unknown
        return Value(kind=LOADER, origin=node, source=SOURCE_MIXED)
    if dataset.kind == OBJECT:  # a dataset class of this file: batches are what `__getitem__` gives
        item = ev.program.dataset_item(dataset, node, ev, env)
        parts = [v for v in (item.items if item is not None and item.kind == TUPLE else (item,))
                 if v is not None and v.kind in (TENSOR, BATCH, ANY)]
        if any(not v.device.known for v in parts):  # (on the GPU for some callers: unknown)
            return Value(kind=LOADER, origin=node, source=SOURCE_MIXED)
        accelerated = [v.device for v in parts if not v.device.is_cpu]
        if accelerated:
            return Value(kind=LOADER, origin=node, device=accelerated[0])
    return Value(kind=LOADER, origin=node, device=dataset.device if dataset.kind == DATASET else UNKNOWN,
                 items=dataset.items if dataset.kind == DATASET else ())


def _literal_option(call: ApiCall, keyword: str) -> Optional[bool]:
    """Is a loader option (`pin_memory=`, `num_workers=`) on, as spelled at the call? None: cannot tell."""
    arg = call.keyword(keyword)
    if arg is None:
        return None if any(a.node.star == "**" for a in call.args) else False
    expr = arg.node.value
    literal = integer_value(expr)
    if literal is not None:
        return api.loader_option(literal)
    name = dotted_name(expr)
    if name in ("True", "False"):
        return api.loader_option(name == "True")
    defaults = call.ev.program.argument_defaults
    if isinstance(expr, cst.Attribute) and expr.attr.value in defaults:
        # `num_workers=opt.workers` with `--workers` defaulting to 0: a run without the flag
        default = defaults[expr.attr.value]
        return api.loader_option(default) if isinstance(default, (bool, int)) else None
    return None


@FUNCTIONS.on(api.FIELD_DEFAULTS)
def field_default(call: ApiCall) -> Optional[Value]:
    """`field(default=v)`, `field(default_factory=lambda: torch.device(...))`: what an instance built
    without that argument holds."""
    default = call.keyword("default")
    if default is not None:
        return default.value
    factory = call.keyword("default_factory")
    if factory is not None and isinstance(factory.node.value, cst.Lambda) and not factory.node.value.params.params:
        return call.ev.eval(factory.node.value.body, call.env)
    return None


@FUNCTIONS.on(api.NAMESPACES)
def namespace(call: ApiCall) -> Optional[Value]:
    """`SimpleNamespace(input_ids=ids)`: each attribute is the keyword's value."""
    if not call.args or not all(a.keyword for a in call.args):
        return None
    return replace(keyed_dict(tuple((a.keyword, a.value) for a in call.args), call.node), cls=call.name)


@FUNCTIONS.on(api.TENSOR_DATASETS)
def tensor_dataset(call: ApiCall) -> Value:
    """`TensorDataset(x, y)`: samples of each tensor, where that tensor is."""
    args = call.args
    tensors = [a.value for a in args if a.value.kind in (TENSOR, BATCH)]
    device = tensors[0].device if tensors and len(tensors) == len(args) else UNKNOWN
    positions: Tuple[Value, ...] = ()
    if any(t.device != device for t in tensors):
        device = UNKNOWN
        if len(tensors) == len(args):  # (data on the CPU, labels on the GPU: each position as it is)
            positions = tuple(Value(kind=TENSOR, device=t.device, origin=t.origin, scalar=False) for t in tensors)
    return Value(kind=DATASET, device=device, origin=call.node, items=positions)


# --- modules and optimizers -----------------------------------------------------------------

@FUNCTIONS.when(api.builds_module_state)
def loaded_weights(call: ApiCall) -> None:
    """Loaded tensors made the weights of a module (`Embedding.from_pretrained(table)`)."""
    for arg in call.args:
        call.ev.note_device_state(arg.value)


@FUNCTIONS.on(api.PARAMETER_CLASSES)
def parameter(call: ApiCall) -> Value:
    inner = call.first
    return Value(kind=TENSOR, device=inner.device, origin=inner.origin or call.node, parameter=True, scalar=inner.scalar)


@FUNCTIONS.on(api.DATA_PARALLEL, api.DISTRIBUTED_DATA_PARALLEL)
def wrap_parallel(call: ApiCall) -> Value:
    """DataParallel / DDP around a module: where it must be, and the GPUs it is told to use."""
    ev, node, args = call.ev, call.node, call.args
    inner = call.first
    module = Operand(args[0].node.value, inner) if args else None
    ids = call.keyword("device_ids")
    if ids is None:
        positional = [a for a in args if a.keyword is None]
        ids = positional[1] if len(positional) > 1 else None
    has_ids = _gives_device_ids(ids)
    facts = ev.program.facts
    if call.name in api.DATA_PARALLEL:
        wrapper = "DataParallel"
        if inner.kind == MODULE and inner.device.is_accelerator and is_move_call(inner.origin) and ev.recording:
            facts.moves_before_wrap.append(MoveBeforeWrap(node, inner.origin))
    else:
        # (the wrap is no evidence of where ranks pick their GPU: that is done where the process
        # group starts, which for a file that only wraps is elsewhere, with its set_device)
        wrapper = "DistributedDataParallel" if has_ids else ""
        facts.distributed.requires_accelerator |= has_ids
        if has_ids and inner.kind == MODULE and inner.device.is_cpu and module and ev.first_time("parallel", inner, node):
            facts.parallel_on_cpu.append(ParallelOnCpu(node, module, "DistributedDataParallel"))
        elif (has_ids and ids.value.kind in (LIST, TUPLE) and inner.kind == MODULE and inner.device.kind == SELECTED
              and (inner.device.index is None or inner.device.key == PER_RANK)  # (a constant GPU: DEV202's)
              and not call.env.guarded and module and ev.first_time("parallel", inner, node)):
            # `DDP(model.to(device), device_ids=[gpu])` with `device` the CPU where there is no GPU
            facts.parallel_on_cpu.append(ParallelOnCpu(node, module, "DistributedDataParallel", without_gpu=True))
        part = replaced_part(inner)
        # (a part left on the CPU beside parts on a GPU: DDP rejects a module on several device
        # types whatever `device_ids` says)
        if part is not None and ev.first_time("part", inner, node):
            facts.parallel_on_cpu.append(ParallelOnCpu(node, part, "DistributedDataParallel"))
    if module:
        check_device_ids(ev, node, module, ids, call.name in api.DATA_PARALLEL)
        ev.program.wrap_device_ids[id(node)] = ids
    if inner.ident is not None:
        ev.program.contexts.heap.wrapped.add(inner.ident)
    return Value(kind=MODULE, device=inner.device, origin=inner.origin or node, ident=inner.ident,
                 cls=inner.cls, stateful=True, scatters=wrapper, stray=inner.stray if wrapper == "DataParallel" else None,
                 wrapped_at=node)


def check_device_ids(ev, node: cst.CSTNode, module: Operand, ids, data_parallel: bool,
                     wrap: Optional[cst.CSTNode] = None) -> None:
    """The GPUs a DataParallel/DDP wrapper is told to use against where its module is: at the wrap,
    and again where the wrapper is moved (`DataParallel(model, device_ids=ids).cuda()` puts the
    module on the current GPU, whatever `ids` starts with)."""
    device = module.value.device
    has_ids = _gives_device_ids(ids)
    facts = ev.program.facts
    if wrap is not None and any(f.node is wrap or f.wrap is wrap for f in facts.device_ids_mismatches):
        return  # (one wrap, one finding: it was reported where it was made or first moved)
    first_id = _first_literal_id(ids.node.value, ids.value) if has_ids else None
    if first_id is None and not has_ids and data_parallel:
        first_id = 0  # DataParallel's default device_ids are all GPUs: the module must be on the first
    # (a hard-coded `cuda:1` is that GPU wherever it runs at all)
    fixed = (device.kind in (CUDA, SELECTED, UNGUARDED) and device.index is not None
             and device.key != PER_RANK)
    if first_id is not None and fixed and device.index != first_id and ev.recording:
        facts.device_ids_mismatches.append(DeviceIdsMismatch(node, module, first_id, default_ids=not has_ids, wrap=wrap))
    elif (data_parallel and not has_ids and device.key == PER_RANK
          and device.kind in (CUDA, SELECTED, UNGUARDED) and ev.recording):
        # `model.to(torch.device("cuda", args.gpu_index))` then `DataParallel(model)`: right only when
        # the GPU chosen at run time is GPU 0
        facts.device_ids_mismatches.append(DeviceIdsMismatch(node, module, 0, default_ids=True, wrap=wrap))
    per_rank = _first_per_rank_id(ids.node.value) if has_ids else None
    if per_rank is not None and fixed and ev.recording:
        # `device_ids=[rank]` while the module sits on one constant GPU: every other rank is wrong
        facts.device_ids_mismatches.append(DeviceIdsMismatch(node, module, None, per_rank, wrap=wrap))
    elif (has_ids and first_id is None and per_rank is None and fixed and ev.recording
          and _unread_list(ids.value)):
        # a list of GPUs picked at run time (`--gpu_ids 1 0`, filtered by what is there) while the
        # module sits on one constant GPU: right only when the list happens to start there
        facts.device_ids_mismatches.append(DeviceIdsMismatch(
            node, module, None, unread_ids=ev.program.module.code_for_node(ids.node.value), wrap=wrap))


@FUNCTIONS.when(api.is_nn_module_class)
def nn_module(call: ApiCall) -> Value:
    """`nn.Linear(...)`, `nn.Sequential(a, b)`: a new module, stateful or not, and where it is built."""
    ev, node, args, env = call.ev, call.node, call.args, call.env
    name = call.short_name
    # a loss weighted by a 0-dim tensor (`pos_weight=torch.tensor(5.0)`) mixes with GPU tensors
    # like a number does: only weights with a shape make its device matter
    keywords = frozenset(a.keyword for a in args if a.keyword and a.value.scalar is not True)
    stateful = api.nn_class_is_stateful(name, keywords)
    device = ev.construction_device(args, env, node)
    ev.note_created(id(node))
    # `nn.CrossEntropyLoss(weight=self.empty_weight)`: the tensors it is given become its buffers
    # as they are, so the module is where they are
    given = {a.value.device for a in args if a.keyword and a.value.kind == TENSOR and a.value.scalar is not True}
    if stateful and len(given) == 1 and call.keyword("device") is None:
        device = next(iter(given))
    if stateful is None:  # containers: stateful when a child is, and where their children are
        children: List[Value] = []
        for arg in args:
            value = arg.value
            if arg.node.star:  # `nn.Sequential(*layers)`: the list's elements, when it is one the analysis built
                children.extend(value.items if value.kind in (TUPLE, LIST) and value.items else (UNKNOWN_VALUE,))
            else:
                children.extend(value.items if value.kind in (TUPLE, LIST) else (value,))
        modules = [child for child in children if child.kind == MODULE]
        if any(child.stateful for child in modules):
            stateful = True
        elif modules and len(modules) == len(children) and all(child.stateful is False for child in modules):
            stateful = False
        if children:
            device = children[0].device
            for child in children[1:]:
                device = device if child.device == device else UNKNOWN
        if modules and len(modules) == len(children):
            # its parts, for `self.blocks[0](x)` and `for blk in self.blocks:` to run their forward
            part = join_all(modules)
            return Value(kind=MODULE, device=device, origin=node, ident=id(node), cls=name, stateful=stateful,
                         items=(part,) if part.cls else ())
    return Value(kind=MODULE, device=device, origin=node, ident=id(node), cls=name, stateful=stateful)


def _is_optimizer_class(qualname: str) -> bool:
    return (qualname.startswith(api.OPTIMIZER_PREFIX) and qualname.rsplit(".", 1)[-1][:1].isupper()
            and not qualname.startswith(api.NOT_OPTIMIZERS))


@FUNCTIONS.when(_is_optimizer_class)
def optimizer(call: ApiCall) -> Value:
    """An optimizer remembers the module whose parameters it holds, and where it was then."""
    ev, node, args = call.ev, call.node, call.args
    # (a class picked by a name read at run time is "the optimizer", not one by name)
    name = "" if call.name in api.CLASSES_PICKED_BY_NAME.values() else call.short_name
    owner = _parameters_owner(args[0].node.value) if args and args[0].keyword is None else None
    module = ev.eval(owner, call.env) if owner is not None else UNKNOWN_VALUE
    if module.kind == MODULE and module.ident is None and module.aliases:
        # one of several modules (`for k, n in nets.items()`): built on whichever it is
        eager = name in api.EAGER_STATE_OPTIMIZERS and module.device.is_cpu
        return Value(kind=OPTIMIZER, origin=node, cls=name, aliases=module.aliases, device=module.device,
                     state_at=node if eager else None)
    if (module.kind != MODULE or module.ident is None) and args and args[0].keyword is None:
        module = _owning_module(args[0].value)  # param groups: lists and dicts of one module's parameters
    if module.kind != MODULE or module.ident is None:
        if args and args[0].keyword is None:
            _note_optimized_tensors(ev, args[0].value, node, name or "the optimizer")
        return Value(kind=OPTIMIZER, origin=node, cls=name)
    eager = name in api.EAGER_STATE_OPTIMIZERS and module.device.is_cpu
    ev.program.contexts.heap.note_optimizer(node, module.ident)
    return Value(kind=OPTIMIZER, origin=node, cls=name, ident=module.ident, device=module.device,
                 state_at=node if eager else None)


def _note_optimized_tensors(ev, params: Value, node: cst.Call, name: str) -> None:
    """`Adam([self.log_alpha])`: tensors of no module, made on the CPU, that the optimizer holds
    themselves (what a later `.to()` of them returns is a copy it never updates)."""
    items = params.items if params.kind in (LIST, TUPLE) else ()
    for item in items:
        if (item.kind == TENSOR and item.device.is_cpu and not item.parameter and item.owner is None
                and isinstance(item.origin, cst.Call)):
            ev.program.contexts.heap.optimized_tensors.setdefault(id(item.origin), (node, name))


@FUNCTIONS.when(api.is_model_factory)
def model_factory(call: ApiCall) -> Value:
    """`timm.create_model(...)`, `torchvision.models.resnet50()`: a new module, built on the CPU."""
    call.ev.note_created(id(call.node))
    return Value(kind=MODULE, device=call.ev.construction_device(call.args, call.env, call.node), origin=call.node,
                 ident=id(call.node), cls=call.short_name, stateful=True)


@FUNCTIONS.when(lambda name: api.hugging_face_kind(name) == "tokenizer"
                or (api.hugging_face_kind(name) is None and api.is_hugging_face_tokenizer_class(name)))
def tokenizer(call: ApiCall) -> Value:
    return Value(kind=TOKENIZER, origin=call.node)


@FUNCTIONS.when(lambda name: api.hugging_face_kind(name) == "model")
def pretrained_model(call: ApiCall) -> Value:
    """`AutoModel.from_pretrained(...)`: on the CPU unless `device_map=` places it, or where the model it wraps is."""
    ev, node, args = call.ev, call.node, call.args
    device_map = call.keyword("device_map")
    ev.note_created(id(node))
    device = ev.construction_device(args, call.env, node)
    first = args[0].value if args and args[0].keyword is None else None
    if first is not None and first.kind in (MODULE, ANY) and first.literal is None and first.cls != "str":
        # `PeftModel.from_pretrained(base_model, path)` wraps the model it is given: it is where that is
        device = first.device if first.kind == MODULE else UNKNOWN
    if device_map is not None:
        device = device_map.value.device if device_map.value.kind == DEVICE else UNKNOWN
    return Value(kind=MODULE, device=device, origin=node, ident=id(node), stateful=True, cls=api.PRETRAINED_MODEL)


@FUNCTIONS.when(lambda name: api.hugging_face_kind(name) == "pipeline")
def pipeline(call: ApiCall) -> Value:
    return Value(source=SOURCE_DEVICE_AWARE)


# --- host libraries and tensor operations -----------------------------------------------------

@FUNCTIONS.when(lambda name: name.startswith(api.HOST_NUMBER_MODULES))
def host_number(call: ApiCall) -> Value:
    """`math.exp(x)`, `random.random()`: a Python number."""
    return Value(kind=HOST)


@FUNCTIONS.when(api.is_host_library)
def host_library(call: ApiCall) -> Value:
    """numpy, PIL, matplotlib...: host work, which no accelerator tensor may reach unconverted."""
    ev = call.ev
    ev.note_preprocessing(call.name, call.args, call.node)
    for arg in call.args:
        ev.check_host_conversion(arg.node.value, arg.value, call.node, call.name, call.env)
    batch = _step_data_in(call.args)
    if batch is not None and call.name.startswith(api.PREPROCESSING_ROOTS):
        # `np.stack(frames)` assembles those frames' data; `np.log1p(a)` works on it
        return batch if call.name in api.NUMPY_ASSEMBLY else replace(batch, host_work=call.node)
    return Value(kind=HOST)


@FUNCTIONS.when(api.is_op)
def operation(call: ApiCall) -> Value:
    """A torch function of several tensors: they must share a device, and the result is there."""
    operands = call.ev.operands_of(call.args)
    if call.short_name in api.HOST_TARGET_LOSSES:
        operands = operands[:1]
    return call.ev.check_operands(call.node, operands, call.name.replace("torch.nn.functional.", "F."),
                                  arithmetic=call.short_name in api.ARITHMETIC_FUNCTIONS)


# --- helpers -----------------------------------------------------------------------------------

def _gives_device_ids(ids: Optional[Arg]) -> bool:
    """Does `device_ids=` surely name GPUs? Not when it is None, nor when it is None on one side of
    a test the analysis cannot decide (`[device.index] if device.type == "cuda" else None`)."""
    if ids is None or ids.value.literal == (None,) or dotted_name(ids.node.value) == "None":
        return False
    expr = ids.node.value
    if isinstance(expr, cst.IfExp) and "None" in (dotted_name(expr.body), dotted_name(expr.orelse)):
        return ids.value.kind in (TUPLE, LIST)
    return True


def _unread_list(ids: Value) -> bool:
    """A list or tuple of GPU indices whose first one the analysis cannot read, and which is not
    counted from 0 (`range(n)`, `[i for i in range(n)]`, `list(range(n))` are)."""
    if ids.kind not in (LIST, TUPLE) or ids.cls == RANGE or not ids.items:
        return False
    first = ids.items[0]
    return first.kind in (HOST, ANY) and first.cls != RANGE and literal_of(first) is None


def _step_data_in(args: Sequence[Arg]) -> Optional[Value]:
    """The host data of one step (a batch's `.numpy()`, a list of frames) among a call's arguments."""
    for arg in args:
        value = arg.value.items[0] if arg.value.kind == LIST and arg.value.items else arg.value
        if value.source == SOURCE_LOADER and value.kind == HOST:
            return value
    return None


def _placeholder(node: cst.Call) -> Value:
    """`torch.Tensor()`, `torch.empty(0)`: a tensor with no elements, kept until a real one replaces
    it (`self.out = torch.Tensor()` in `__init__`, set by `fw()`). Where it is, says nothing."""
    return Value(kind=TENSOR, origin=node)


def _empty_data(args: Sequence[Arg]) -> bool:
    """`torch.tensor([])`: a copy of no data (a streaming buffer that starts empty, NeMo's clustering)."""
    data = args[0].node.value if args and args[0].keyword is None else None
    return isinstance(data, (cst.List, cst.Tuple)) and not data.elements


def _empty_shape(args: Sequence[Arg]) -> bool:
    """`torch.empty(0)`, `torch.zeros(0)`: a factory asked for no elements."""
    positional = [a for a in args if a.keyword is None]
    return len(positional) == 1 and isinstance(positional[0].node.value, cst.Integer) and positional[0].node.value.value == "0"


def _owning_module(value: Value) -> Value:
    """The module all the parameters inside `value` (lists, dicts, param groups) belong to, seen as
    a module value where those parameters are; unknown when there are several or none."""
    owners = set()
    devices = set()
    stack = [(value, 0)]
    while stack:
        current, level = stack.pop()
        if current.keyed and level < 4:  # a param group: its "params"; `lr`, `weight_decay` are options
            stack.extend((item, level + 1) for key, item in current.keyed if key == "params")
        elif current.kind in (TENSOR, BATCH) and current.parameter and current.owner is not None:
            owners.add(current.owner)
            devices.add(current.device)
        elif current.items and level < 4:
            stack.extend((item, level + 1) for item in current.items)
        elif current.kind not in (HOST, LIST, TUPLE, BATCH):
            return UNKNOWN_VALUE
    if len(owners) != 1 or len(devices) != 1:
        return UNKNOWN_VALUE
    return Value(kind=MODULE, device=devices.pop(), ident=owners.pop())


def _first_per_rank_id(expr: cst.BaseExpression) -> Optional[str]:
    """`device_ids=[local_rank]`: the name each process's own GPU index comes from."""
    if isinstance(expr, (cst.List, cst.Tuple)) and len(expr.elements) == 1:
        return dotted_name(expr.elements[0].value)
    return None


def _first_literal_id(expr: cst.BaseExpression, value: Value) -> Optional[int]:
    """The first of `device_ids=[0, 1]`, written out or a constant the analysis knows (`cfg.gpu_ids`)."""
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
        return integer_value(expr.elements[0].value)
    if value.kind == TUPLE and value.items:
        first = literal_of(value.items[0])
        return first if isinstance(first, int) and not isinstance(first, bool) else None
    return None


def _parameters_owner(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`model.parameters()`, `filter(f, model.parameters())` -> `model`."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "filter" and len(expr.args) == 2:
        expr = expr.args[1].value
    if (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in ("parameters", "named_parameters")
            and isinstance(expr.func.value, (cst.Name, cst.Attribute))):
        return expr.func.value
    return None
