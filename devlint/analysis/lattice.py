"""The abstract domain: where a value lives and what kind of value it is.

A `Device` is one point of the device lattice from DESIGN §2.  Concrete
devices (cpu, cuda[:i], mps, xpu, meta) sit beside three abstract ones:

* ``selected``   an accelerator picked at run time with a CPU fallback;
* ``unguarded``  an accelerator asked for with no fallback (crashes on laptops);
* ``symbolic``   "whatever device `key` holds": a device variable whose value
  the analysis cannot see (a ``device`` parameter, ``args.device``), or the
  device of the module whose ``forward`` is being read (key ``"self"``).

``unknown`` is the top of the lattice and is always silent.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import List, Optional, Sequence, Tuple

import libcst as cst

class _Name(str, Enum):
    """An enumeration whose members are also the strings they stand for (in messages, JSON, and
    where a device kind is read from a string such as `"mps"`)."""

    __str__ = str.__str__
    __format__ = str.__format__


class DeviceKind(_Name):
    CPU = "cpu"
    CUDA = "cuda"
    MPS = "mps"
    XPU = "xpu"
    META = "meta"
    SELECTED = "selected"
    UNGUARDED = "unguarded"
    SYMBOLIC = "symbolic"
    UNKNOWN = "unknown"


CPU_KIND = DeviceKind.CPU
CUDA = DeviceKind.CUDA
MPS = DeviceKind.MPS
XPU = DeviceKind.XPU
META = DeviceKind.META
SELECTED = DeviceKind.SELECTED
UNGUARDED = DeviceKind.UNGUARDED
SYMBOLIC = DeviceKind.SYMBOLIC
UNKNOWN_KIND = DeviceKind.UNKNOWN

ACCELERATOR_KINDS = frozenset({CUDA, MPS, XPU, SELECTED, UNGUARDED})


@dataclass(frozen=True)
class Device:
    kind: str  # a DeviceKind (a plain string such as "mps" is the same kind)
    index: Optional[int] = None
    key: str = ""  # for symbolic devices: the expression or owner they stand for
    #: where an accelerator with no fallback was asked for (the string, `.cuda()`): the one root every
    #: value placed there shares, however far it flows. Not part of the device's identity.
    root: Optional[cst.CSTNode] = field(default=None, compare=False, hash=False)

    @property
    def known(self) -> bool:
        return self.kind != UNKNOWN_KIND

    @property
    def is_cpu(self) -> bool:
        return self.kind == CPU_KIND

    @property
    def is_accelerator(self) -> bool:
        return self.kind in ACCELERATOR_KINDS

    def describe(self) -> str:
        if self.kind in (CUDA, MPS, XPU):
            return self.kind if self.index is None else f"{self.kind}:{self.index}"
        if self.key == PER_RANK and self.kind in (CUDA, SELECTED, UNGUARDED):
            return "the GPU chosen at run time"
        if self.kind == SELECTED:
            return "the selected accelerator" if self.index is None else f"the selected accelerator (cuda:{self.index})"
        if self.kind == UNGUARDED:
            name = "cuda" if self.index is None else f"cuda:{self.index}"
            return f"{name} (no CPU fallback)"
        if self.kind == SYMBOLIC:
            return "the module's device" if self.key == "self" else f"`{self.key}`"
        return self.kind


#: The key of a CUDA device whose index is computed (`f"cuda:{local_rank}"`, `args.gpu`): each process
#: (or each run) picks its own.
PER_RANK = "per-rank"

UNKNOWN = Device(UNKNOWN_KIND)
CPU = Device(CPU_KIND)


@dataclass(frozen=True)
class CurrentGpu:
    """The GPU a bare `.cuda()` lands on at one program point."""

    device: Device
    #: nobody has chosen one since the process started, so it is GPU 0, as long as no code this
    #: analysis cannot see (an `Accelerator()`, `deepspeed.initialize`) has run since
    assumed: bool = False


#: the key of GPU 0 as the GPU a process starts on: no code chose it (`.cuda()` before any
#: `set_device`), so it is the GPU chosen at run time wherever that choice was left at its default
START_GPU = "process-start"

#: a process starts on GPU 0
PROCESS_START_GPU = CurrentGpu(Device(CUDA, 0, START_GPU), assumed=True)


def gpu_at_exit(exits: Sequence[Tuple[Optional[CurrentGpu], str]]) -> Optional[CurrentGpu]:
    """The current GPU after a call, from the one at each way out of it (each return, and the end
    of the body when it is reached) with its availability path: the same at each, or where the GPU
    is (`if torch.cuda.is_available(): torch.cuda.set_device(rank); return ...`); else unknown."""
    gpus = [gpu for gpu, path in exits if path != HOST_PATH] or [gpu for gpu, _ in exits]
    return gpus[0] if gpus and all(gpu == gpus[0] for gpu in gpus) else None


def current_gpu_after(chosen: Optional[Device]) -> Optional[CurrentGpu]:
    """`torch.cuda.set_device(chosen)` / `with torch.cuda.device(chosen):`: a fixed GPU, each process's
    own one (`set_device(local_rank)`), or, for anything else, not known."""
    if chosen is None or not chosen.known:
        return None
    if chosen.key == PER_RANK:
        return CurrentGpu(Device(CUDA, None, PER_RANK))
    if chosen.index is not None:
        return CurrentGpu(Device(CUDA, chosen.index))
    return None


def symbolic(key: str) -> Device:
    return Device(SYMBOLIC, key=key)


def join_devices(a: Device, b: Device, availability_split: bool = False) -> Device:
    """Least upper bound of two devices at a merge point.

    ``availability_split`` is true when the two paths were separated by an
    accelerator-availability test: an accelerator on one side and the CPU on
    the other is then exactly the SELECTED device.
    """
    if a == b:
        return a
    if not a.known or not b.known:
        return UNKNOWN
    if availability_split and {a.is_cpu, b.is_cpu} == {True, False} and (a.is_accelerator or b.is_accelerator):
        accelerator = b if a.is_cpu else a
        # `"cuda:1" if ... else "cpu"` is GPU 1 where there is one
        return Device(SELECTED, index=accelerator.index, key=accelerator.key, root=accelerator.root)
    if a.is_accelerator and b.is_accelerator:
        if a.kind == b.kind:
            # same accelerator, indices differ; a GPU picked per rank on one path (`f"cuda:{local_rank}"
            # if args.use_ddp else "cuda"`) is one where that path runs several processes
            return Device(a.kind, key=PER_RANK if PER_RANK in (a.key, b.key) else "")
        if {a.kind, b.kind} <= {CUDA, UNGUARDED, SELECTED}:
            key = PER_RANK if PER_RANK in (a.key, b.key) else ""
            return Device(SELECTED, key=key) if SELECTED in (a.kind, b.kind) else Device(CUDA, key=key)
    return UNKNOWN


def _placement(device: Device) -> Tuple[str, object]:
    """Where a device lands on a machine that has the accelerator."""
    if device.kind == CPU_KIND:
        return ("cpu", None)
    if device.kind == META:
        return ("meta", None)
    if device.kind == SYMBOLIC:
        return ("symbolic", device.key)
    return ("accelerator", device.index)


def conflicts(a: Device, b: Device) -> bool:
    """True when tensors on `a` and `b` cannot meet in one op on a GPU machine.

    Only sure conflicts count: cpu against any accelerator (SELECTED and
    symbolic devices included, since the point of choosing a device is to run
    on the accelerator), meta against anything real, and two different
    explicit accelerator indices.
    """
    if not a.known or not b.known or a == b:
        return False
    pa, pb = _placement(a), _placement(b)
    if pa[0] == "meta" or pb[0] == "meta":
        return pa[0] != pb[0]
    if "cpu" in (pa[0], pb[0]):
        return pa[0] != pb[0]
    if pa[0] == pb[0] == "accelerator":
        if _constant_gpu(a) and _constant_gpu(b):
            return pa[1] != pb[1]
        # one GPU written out (`"cuda:0"`) against the GPU each process picks: apart on every other
        # process. The GPU a process starts on is no GPU written out: a GPU chosen at run time
        # (`torch.device("cuda", args.gpu) if args.gpu is not None else torch.device("cuda")`) is that
        # one where nobody chose (DEV205 says it where ranks share it)
        return ((_constant_gpu(a) and a.key != START_GPU and b.key == PER_RANK)
                or (_constant_gpu(b) and b.key != START_GPU and a.key == PER_RANK))
    return False


def same_placement(a: Device, b: Device) -> bool:
    """True when `a` and `b` surely name one place (`"cuda"` and `"cuda"`, the CPU and the CPU):
    a move from one to the other changes nothing."""
    return a.known and b.known and _placement(a) == _placement(b)


def _constant_gpu(device: Device) -> bool:
    return device.index is not None and device.key != PER_RANK


# --- values -----------------------------------------------------------------

class Kind(_Name):
    """What a value is."""

    MODULE = "module"
    TENSOR = "tensor"
    BATCH = "batch"          # a collection of tensors: tuples, dicts, BatchEncoding
    TUPLE = "tuple"          # a tuple whose items are known one by one
    OPTIMIZER = "optimizer"
    LOADER = "loader"
    DEVICE = "device"
    HOST = "host"            # python numbers, numpy arrays, shapes
    TOKENIZER = "tokenizer"
    CLASS = "class"          # a class object we know (its name is in `cls`)
    FUNCTION = "function"    # a function defined in the file (its name in `cls`)
    LIST = "list"            # a python list/dict whose element is `item`
    ANY = "unknown"
    REF = "ref"              # an imported module or object; `cls` holds its qualified name
    OBJECT = "object"        # an instance of a non-module class defined in the file
    METHOD = "method"        # a method of a class of the file bound to `items[0]` (its name in `cls`)
    DATASET = "dataset"      # a TensorDataset: its device is that of the tensors it holds


MODULE, TENSOR, BATCH, TUPLE = Kind.MODULE, Kind.TENSOR, Kind.BATCH, Kind.TUPLE
OPTIMIZER, LOADER, DEVICE, HOST, TOKENIZER = Kind.OPTIMIZER, Kind.LOADER, Kind.DEVICE, Kind.HOST, Kind.TOKENIZER
CLASS, FUNCTION, LIST, ANY, REF = Kind.CLASS, Kind.FUNCTION, Kind.LIST, Kind.ANY, Kind.REF
OBJECT, METHOD, DATASET = Kind.OBJECT, Kind.METHOD, Kind.DATASET


class Source(_Name):
    """Where a value came from; rules use it to pick the code and the words."""

    NONE = ""
    FACTORY = "factory"            # made without device= in `forward` or a loop
    CREATED = "created"            # made elsewhere
    STEP = "step"                  # made in a helper called every step (from a loop or a forward)
    LOADER = "loader"
    TOKENIZER = "tokenizer"
    LOAD = "torch.load"
    UNREGISTERED = "unregistered"  # a plain tensor attribute of a module, seen from its methods
    #: a value known on one path and not on another (`t.device if is_tensor(t) else cpu`, a loader
    #: replaced under a flag): unknown, and not to be guessed from its variable's name
    MIXED = "mixed"
    #: what a call the analysis cannot see into returned: unknown, and not guessed from its name
    OPAQUE = "opaque"
    #: `t.type()`: the name of t's tensor type, which carries t's device (`x.type(t.type())` moves x there)
    TYPE_NAME = "type-name"
    #: `torch.cuda.current_device()`: the index of whichever GPU is current, which is GPU 0 in every
    #: process until `torch.cuda.set_device` says otherwise (not a per-rank index)
    CURRENT_DEVICE = "current-device"
    #: the answer of an accelerator-availability test (`torch.cuda.is_available()`, `device.type == "cuda"`)
    AVAILABILITY = "availability"
    #: `device.type`: the kind of a device, compared to decide where code runs
    DEVICE_TYPE = "device-type"
    #: made by code told where to put it (a pipeline, a call given `device=`): it places its parts itself
    DEVICE_AWARE = "device-aware"
    #: what a function of another file of the project gave (its summary)
    PROJECT = "project"


SOURCE_FACTORY, SOURCE_CREATED, SOURCE_STEP = Source.FACTORY, Source.CREATED, Source.STEP
SOURCE_LOADER, SOURCE_TOKENIZER, SOURCE_LOAD = Source.LOADER, Source.TOKENIZER, Source.LOAD
SOURCE_UNREGISTERED, SOURCE_MIXED, SOURCE_OPAQUE = Source.UNREGISTERED, Source.MIXED, Source.OPAQUE
SOURCE_TYPE_NAME, SOURCE_CURRENT_DEVICE = Source.TYPE_NAME, Source.CURRENT_DEVICE
SOURCE_AVAILABILITY, SOURCE_DEVICE_TYPE, SOURCE_DEVICE_AWARE = Source.AVAILABILITY, Source.DEVICE_TYPE, Source.DEVICE_AWARE

#: the `scatters` of a module whose own `forward` moves its input where it needs it (ignite's
#: InceptionModel: `data = data.to(self._device)`): its callers may pass any device
OWN_FORWARD_MOVES = "its forward"
#: the `cls` of host data a generator or an `__iter__` yields, one step at a time (a video frame):
#: treated as a loader's batch, named for what it is
STEP_SAMPLE = "step-sample"


#: The `cls` of `range(n)` (counted from 0) and of the numbers it yields: device_ids made from it start at GPU 0
RANGE = "range"

#: The `cls` of a `torch.distributions` object: it holds tensors where its parameters are, but has
#: no `.to()` and cannot be registered on a module.
DISTRIBUTION = "torch.distributions.Distribution"
#: The `cls` of what a module's `state_dict()` gives (and a checkpoint file holding it gives back).
STATE_DICT = "state_dict"
#: The `cls` of a file path one of `torch_api.PATH_BUILDERS` made (`os.path.join(...)`).
PATH = "path"


@dataclass(frozen=True)
class Value:
    kind: Kind = Kind.ANY
    device: Device = UNKNOWN
    origin: Optional[cst.CSTNode] = None   # the node where it got its device
    source: Source = Source.NONE
    ident: Optional[int] = None            # object identity for in-place module moves
    cls: str = ""                          # class or function name
    stateful: Optional[bool] = None        # module has parameters/buffers
    scatters: str = ""                     # the wrapper (DataParallel, DDP with device_ids) that moves inputs itself
    scalar: Optional[bool] = None          # 0-dim tensor (mixes with accelerator tensors)
    parameter: bool = False                # nn.Parameter: registers itself on a module
    explicit_device: bool = False          # factory was given device=
    items: Tuple["Value", ...] = field(default=())  # TUPLE items, or (element,) for LIST
    in_place_move: bool = False            # `.to()` mutates (BatchEncoding)
    state_at: Optional[cst.CSTNode] = None  # optimizers: where CPU state was created or loaded
    #: a small constant the code spells out (`True`, `"pt"`, `3`), boxed so that `None` is one too;
    #: it lets a call in context take the branch its literal argument selects
    literal: Optional[Tuple[object]] = None
    #: allocation sites this value may be (a loop variable over `(enc, dec)`): a move updates each weakly
    aliases: Tuple[int, ...] = ()
    #: the two sides of an availability split that behave differently (a model wrapped in
    #: DataParallel on the GPU path only): each is checked as it is
    alternatives: Tuple["Value", ...] = ()
    host_copy: bool = False                # a CPU tensor copied here from host data (numpy)
    owner: Optional[int] = None            # parameters: the module (allocation site) they belong to
    #: the call that returned it, when it was made inside the callee (`text_to_token_ids(...)`):
    #: messages name both lines. Not part of the value's identity.
    via: Optional[cst.CSTNode] = field(default=None, compare=False, hash=False)
    #: modules: the assignment that replaced a part with a new CPU module after the module moved
    #: (`model.fc = nn.Linear(...)` after `model.to(device)`); the next move takes it along
    stray: Optional[cst.CSTNode] = None
    #: DataParallel/DDP wrappers: where the wrapper was made, for messages (not part of identity)
    wrapped_at: Optional[cst.CSTNode] = field(default=None, compare=False, hash=False)
    #: None on some path (`self.head = None`, set later): an `is None` test on it is not decided
    nullable: bool = False
    #: host data of one step (a batch's `.numpy()`, a frame a generator yields) that numpy worked on
    #: (arithmetic, `astype`, a numpy function): where that work happened, for DEV403
    host_work: Optional[cst.CSTNode] = field(default=None, compare=False, hash=False)
    #: the assignment that put it in the object field it is read from (`self.model = model`), when
    #: that is not where it was made: messages name it, as that is where it could have been placed
    stored: Optional[cst.CSTNode] = field(default=None, compare=False, hash=False)
    #: a dict whose keys are all spelled out (`{"x": x, "y": y}`, then `d["y"] = ...`): each key's
    #: value, so `d["y"]` reads that one (`items` and `device` still summarise them all)
    keyed: Tuple[Tuple[str, "Value"], ...] = ()
    #: functions of the project made by `functools.partial(f, a, k=v)`: the arguments bound ahead,
    #: as (argument node, value) pairs, which a call passes before its own
    bound: Tuple[Tuple[cst.Arg, "Value"], ...] = ()
    #: state dicts: the DataParallel/DDP wrap whose `module.` prefix the keys carry, on every machine
    #: or on those that take the wrapping path; None: the keys are the module's own
    prefixed_by: Optional[cst.CSTNode] = None

    def with_device(self, device: Device, origin: Optional[cst.CSTNode] = None, **changes) -> "Value":
        if "alternatives" not in changes:
            # both sides of a split move alike (a model wrapped on one side only is still that
            # wrapper, or that bare module, where it went)
            changes["alternatives"] = tuple(side.with_device(device, origin) for side in self.alternatives)
        changes.setdefault("stray", None)
        changes.setdefault("stored", None)
        changes.setdefault("keyed", ())
        if origin is not None:  # it got its device here, not in the callee it came back from
            changes.setdefault("via", None)
        return replace(self, device=device, origin=origin if origin is not None else self.origin, **changes)

    @property
    def is_tensorlike(self) -> bool:
        return self.kind in (TENSOR, BATCH)

    @property
    def movable_tensor(self) -> bool:
        """A tensor that `.to(device)` moves (a distribution is tensor-like but has no `.to()`)."""
        return self.kind == TENSOR and self.cls != DISTRIBUTION


UNKNOWN_VALUE = Value()
OPAQUE_VALUE = Value(source=SOURCE_OPAQUE)


ACCELERATOR_PATH = "accelerator"   # the side of an availability test that runs where the accelerator is
HOST_PATH = "host"
SEVERAL_PATH = "several"           # the side of `device_count() > 1`: the other side may have one GPU
BOTH_SIDES = 2                     # `accelerated` for such a split: either side runs on GPU machines


def join_values(a: Value, b: Value, availability_split: bool = False, accelerated: Optional[int] = None) -> Value:
    """`accelerated` says which side (0: `a`, 1: `b`) is the accelerator's path of the split."""
    if a is b or a == b:  # (most names are bound to the very same value on both paths)
        return a
    # `self.running = None`, set to a tensor later: where it is used, it is that tensor (None would
    # fail whatever the device); `self.torch = torch if is_torch_available() else None` is torch
    for empty, other in ((a, b), (b, a)):
        if empty.kind == HOST and empty.literal == (None,) and other.kind in (TENSOR, BATCH, MODULE, OPTIMIZER, OBJECT, REF) \
                and not (availability_split and other.kind == REF):
            return other if other.nullable else replace(other, nullable=True)
        if availability_split and empty.kind == HOST and empty.literal == (None,) and other.kind in (ANY, HOST, REF) \
                and other.literal is None and not other.source:
            # `stream = torch.cuda.Stream() if use_cuda else None`: not None only where CUDA is, so
            # `if stream is not None:` is an availability test
            return Value(source=SOURCE_AVAILABILITY, nullable=True)
        if empty.kind == HOST and empty.literal == (None,) and other.nullable and other.source == SOURCE_AVAILABILITY:
            return other  # (that split, under a test of its own: `if self.first_iteration:`)
        if empty.kind == HOST and empty.literal is not None and not empty.literal[0] \
                and other.kind == HOST and other.source == SOURCE_AVAILABILITY:
            # `non_blocking = False` on one path, `torch.cuda.is_available()` on the other: true only
            # where the accelerator is, so it still decides availability
            return other
    # An empty list on one path and the list filled in a loop on the other: the filled one.
    for empty, filled in ((a, b), (b, a)):
        if empty.kind == LIST and not empty.items and filled.kind in (LIST, BATCH) and (filled.items or filled.kind == BATCH):
            return filled
    # A list written out (`[x]`) on one path and grown by `append` on the other: one list of both.
    for written, grown in ((a, b), (b, a)):
        if written.kind == TUPLE and written.cls == "list" and (grown.kind == BATCH or (grown.kind == LIST and grown.items)):
            element = (grown.items[0] if grown.kind == LIST else
                       Value(kind=TENSOR, device=grown.device, origin=grown.origin, source=grown.source))
            return replace(container_of(list(written.items) + [element], "list"), origin=written.origin)
    if a.kind != b.kind or (a.kind == ANY and (a.alternatives or b.alternatives)):
        if DEVICE in (a.kind, b.kind) and a.device.known != b.device.known:
            return Value(source=SOURCE_MIXED)
        if ANY in (a.kind, b.kind):
            # known on one path only (`loader = engine.make_private(loader)` under a flag): unknown,
            # and not to be guessed from its name either
            return _tensor_on_some_path(Value(source=SOURCE_MIXED), a, b)
        return _tensor_on_some_path(UNKNOWN_VALUE, a, b)
    device = join_devices(a.device, b.device, availability_split)
    alternatives: Tuple[Value, ...] = ()
    if accelerated == BOTH_SIDES and a.kind == MODULE and a.scatters != b.scatters:
        # several GPUs or one: either side may run on a GPU machine, each is checked as it is
        alternatives = _union_sides(a, b)
    elif accelerated is not None and a.kind == MODULE and (a.scatters != b.scatters or (a, b)[accelerated].alternatives):
        # on a machine with the accelerator only that side runs (itself one of several ways a
        # model was wrapped, perhaps): calls check it as it is
        side = (a, b)[accelerated]
        alternatives = side.alternatives or (replace(side, alternatives=()),)
    elif a.kind == MODULE and (a.alternatives or b.alternatives or _wrapped_on_one_side(a, b)):
        # a value split by availability joined with another (`if args.gpu is not None: ... elif
        # torch.cuda.is_available(): wrap`): on a machine with the accelerator it is one of the
        # split's accelerator sides or the other value. A model wrapped on one path of any branch
        # (`if arch == "vgg": wrap a part, move it` / `else: model = DataParallel(model)`) is
        # the wrapper on that path and the bare model on the other: each runs as it is
        alternatives = _union_sides(a, b)
    elif a.kind == CLASS and a.cls != b.cls:
        # one of several classes of the file (`models[args.arch]()`): calling it builds one of them
        alternatives = _union_sides(a, b)
    elif a.kind == OBJECT and a.ident != b.ident and (a.cls or a.alternatives) and (b.cls or b.alternatives):
        # one of several objects (`for metric in self.metrics.values()`): a call runs one of them
        alternatives = _union_sides(a, b)
    items: Tuple[Value, ...] = ()
    if len(a.items) == len(b.items):
        items = tuple(join_values(x, y, availability_split) for x, y in zip(a.items, b.items))
    return Value(
        kind=a.kind,
        device=device,
        origin=_joined_origin(a, b, device),
        source=a.source if a.source == b.source else _mixed(a, b, device),
        ident=a.ident if a.ident == b.ident else None,
        cls=a.cls if a.cls == b.cls else "",
        stateful=_joined_stateful(a.stateful, b.stateful),
        scatters=a.scatters if a.scatters == b.scatters else "",
        scalar=a.scalar if a.scalar == b.scalar else None,
        parameter=a.parameter and b.parameter,
        explicit_device=a.explicit_device and b.explicit_device,
        items=items,
        in_place_move=a.in_place_move and b.in_place_move,
        state_at=a.state_at or b.state_at,  # state loaded on some path is there on that path
        literal=a.literal if a.literal == b.literal else None,
        aliases=_joined_aliases(a, b),
        owner=a.owner if a.owner == b.owner else None,
        alternatives=alternatives,
        # a part left behind on some path (`if n != model.num_classes: model.reset_classifier(n)`)
        # is there on that path, as a path that never replaced it would not hide it at run time
        stray=a.stray or b.stray,
        nullable=a.nullable or b.nullable,
        keyed=_joined_keys(a, b),
        prefixed_by=a.prefixed_by or b.prefixed_by,  # prefixed on some path: on those machines
    )


def _joined_stateful(a: Optional[bool], b: Optional[bool]) -> Optional[bool]:
    """Weights on one path and none on the other (`nn.Identity()` or `nn.Linear(...)` from a
    head factory) are weights on that path: what holds only there still holds there. Unknown
    on either side stays unknown."""
    if a == b:
        return a
    return True if a is not None and b is not None else None


def tensor_side(value: Value) -> Optional[Value]:
    """The tensor a value is, or may be on some path (a tensor-or-number union), or None."""
    if value.kind in (TENSOR, BATCH):
        return value
    if value.kind == ANY and value.alternatives and value.alternatives[0].kind in (TENSOR, BATCH):
        return value.alternatives[0]
    return None


def _tensor_on_some_path(joined: Value, a: Value, b: Value) -> Value:
    """A tensor on one path and something else on the other (`kwargs.items()` of a loss and a
    learning rate): unknown, but a test that proves it a tensor (`isinstance(v, torch.Tensor)`)
    finds the tensor in it again."""
    sides = [side for side in (tensor_side(a), tensor_side(b)) if side is not None]
    if not sides or (len(sides) == 2 and sides[0].kind != sides[1].kind):
        return joined  # (a tensor on one path, a batch on the other: nothing to find again)
    side = join_values(*sides) if len(sides) == 2 else sides[0]
    return replace(joined, alternatives=(replace(side, alternatives=()),))


def _wrapped_on_one_side(a: Value, b: Value) -> bool:
    """A model wrapped in DataParallel/DDP on one path and not (or otherwise) on the other. (Two
    parts that differ only in whether their own `forward` moves its input are one part.)"""
    return a.scatters != b.scatters and bool({a.scatters, b.scatters} & _PARALLEL_WRAPPERS)


_PARALLEL_WRAPPERS = frozenset({"DataParallel", "DistributedDataParallel"})

#: How many ways a joined model is kept apart; more paths than this join into one summary.
MAX_SIDES = 4


def _union_sides(a: Value, b: Value) -> Tuple[Value, ...]:
    """Each way either side may be, once, and at most `MAX_SIDES` of them."""
    sides = []
    for value in (a, b):
        for side in value.alternatives or (replace(value, alternatives=()),):
            if side not in sides:
                sides.append(side)
    return tuple(sides[:MAX_SIDES])


def _joined_keys(a: Value, b: Value) -> Tuple[Tuple[str, Value], ...]:
    """Per-key values survive a join only when both sides spell out the same keys."""
    if not a.keyed or [k for k, _ in a.keyed] != [k for k, _ in b.keyed]:
        return ()
    return tuple((key, join_values(x, y)) for (key, x), (_, y) in zip(a.keyed, b.keyed))


def keyed_dict(entries: Tuple[Tuple[str, Value], ...], origin: Optional[cst.CSTNode]) -> Value:
    """A dict with these literal keys: one summary of its non-host values, and each key's value."""
    values = [value for _, value in entries]
    placed = [value for value in values if value.kind != HOST] or values
    summary = container_of(placed, "dict") if placed else Value(kind=LIST, cls="dict")
    return replace(summary, origin=origin, keyed=entries)


def key_of(value: Value, key: str) -> Optional[Value]:
    """The value stored under a literal key of a dict whose keys are spelled out."""
    return next((item for name, item in value.keyed if name == key), None)


def _mixed(a: Value, b: Value, device: Device) -> str:
    # (a device one path knows and the other does not: a choice between two known devices,
    # `"cuda" if args.cuda else "cpu"`, is still a device variable)
    if a.kind == DEVICE and not device.known and a.device.known != b.device.known:
        return SOURCE_MIXED
    return ""


#: Kinds of value that are made objects, never None, when the analysis saw them made.
_OBJECT_KINDS = frozenset({TENSOR, BATCH, MODULE, DEVICE, OPTIMIZER, LOADER, LIST, TUPLE})


def surely_not_none(value: Value) -> bool:
    """Was this value seen made (not a parameter we know nothing of, not None on some path)?"""
    return value.kind in _OBJECT_KINDS and not value.nullable and value.origin is not None \
        and not isinstance(value.origin, cst.Param)


def _joined_origin(a: Value, b: Value, device: Device) -> Optional[cst.CSTNode]:
    """Where the joined value got its device: the side that has it, and for the device an
    availability test selects, the accelerator's side (the request a GPU machine runs)."""
    if device.kind == SELECTED and a.device.is_cpu != b.device.is_cpu:
        return b.origin if a.device.is_cpu else a.origin
    return b.origin if b.device == device and a.device != device else a.origin


def _joined_aliases(a: Value, b: Value) -> Tuple[int, ...]:
    """The objects either side may be: kept only when both sides are known objects."""
    left = a.aliases or ((a.ident,) if a.ident is not None else ())
    right = b.aliases or ((b.ident,) if b.ident is not None else ())
    if not left or not right or left == right == (a.ident,):
        return ()
    return tuple(sorted(set(left) | set(right)))


def literal_of(value: Value, default: object = None) -> object:
    """The constant a value is known to be, or `default`."""
    return value.literal[0] if value.literal is not None else default


def join_all(items: Sequence[Value], availability_split: bool = False) -> Value:
    result = items[0] if items else UNKNOWN_VALUE
    for item in items[1:]:
        result = join_values(result, item, availability_split)
    return result


def join_paths(values: Sequence[Value], paths: Sequence[str], availability_split: bool) -> Value:
    """The join of a function's results, keeping apart the one its accelerator path returns."""
    joined = join_all(values, availability_split)
    several = [v for v, p in zip(values, paths) if p == SEVERAL_PATH]
    if several and len(several) < len(values):
        sides = (join_all(several), join_all([v for v, p in zip(values, paths) if p != SEVERAL_PATH]))
        if all(side.kind == MODULE for side in sides) and sides[0].scatters != sides[1].scatters:
            return replace(joined, alternatives=tuple(replace(side, alternatives=()) for side in sides))
        return joined
    accelerated = [v for v, p in zip(values, paths) if p == ACCELERATOR_PATH]
    if accelerated and len(accelerated) < len(values):
        side = join_all(accelerated)
        if side.kind == MODULE and joined.kind == MODULE and side.scatters != joined.scatters:
            return replace(joined, alternatives=(replace(side, alternatives=()),))
    return joined


def container_of(items: List[Value], flavour: str) -> Value:
    """A list/dict/generator whose elements are `items`, seen as one element."""
    element = join_all(items)
    if element.keyed:
        # a list of dicts with literal keys (`results.append({"probs": p, "targets": y})`): each of
        # its elements still has those keys
        return Value(kind=LIST, items=(element,), cls=flavour)
    if element.kind in (TENSOR, BATCH):
        # (`scalar=False`: each element has a shape, so taking one out gives a shaped tensor)
        return Value(kind=BATCH, device=element.device, origin=element.origin, source=element.source,
                     parameter=element.parameter, owner=element.owner,
                     scalar=False if element.kind == TENSOR and element.scalar is False else None)
    return Value(kind=LIST, items=(element,), cls=flavour)


def collected_at(container: Value, origin: Optional[cst.CSTNode], via: Optional[cst.CSTNode] = None) -> Value:
    """A container of elements, made at `origin`. Views of a plain tensor attribute collected in it
    (`[b.view(-1) for b in self.cell_anchors]`) still point at the attribute: DEV105 reports them
    where it is stored once they meet the module's device."""
    if container.source == SOURCE_UNREGISTERED:
        return container
    return replace(container, origin=origin, via=via)
