"""Facts the interpreter records for rules to read.

Each fact is a plain record of something the analysis is sure about: a
device mismatch, a discarded move, a tensor handed to a host library, module
state that will not follow ``.to()``.  Rules turn facts into diagnostics;
they never look at the tree themselves.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from .lattice import Value

# Contexts of a device mismatch.
MODEL_CALL = "model-call"   # a module with parameters called with an input elsewhere
OPERATION = "operation"     # operands of one op on different devices


@dataclass(frozen=True)
class Operand:
    node: cst.CSTNode       # the expression as written
    value: Value


@dataclass(frozen=True)
class DeviceMismatch:
    node: cst.CSTNode       # the call or operator that fails
    context: str            # MODEL_CALL or OPERATION
    anchor: Operand         # the module, or the operand already on the device
    offender: Operand       # the value on the wrong device
    operation: str          # what fails, for messages: "model call", "torch.cat", "+"
    #: the offender is a part of the anchor module, put back on the CPU by this assignment
    replaced_by: Optional[cst.CSTNode] = None


@dataclass(frozen=True)
class DiscardedMove:
    node: cst.CSTNode       # the call whose result is thrown away
    receiver: Operand
    method: str             # "to", "cuda", ...
    #: an object of a class of the file whose own `to()` returns a moved copy (detectron2's
    #: `Instances.to`): the class's name, for the message
    copy_of: str = ""


@dataclass(frozen=True)
class HostConversion:
    node: cst.CSTNode       # `.numpy()` call or the host library call
    tensor: Operand
    api: str                # "numpy()", "numpy.array", ...


@dataclass(frozen=True)
class UnregisteredState:
    node: cst.CSTNode       # the assignment or the `.append(...)` call
    owner: str              # the nn.Module subclass
    attribute: str
    value: Value
    what: str               # "tensor", "tensors" (a python list or tuple of them), "list", "dict"
    container_origin: cst.CSTNode = None  # where a plain list/dict was created
    parameters: bool = False  # the list/dict holds nn.Parameters (nn.ParameterList/ParameterDict)


# --- parallel (DEV2xx) --------------------------------------------------------

@dataclass(frozen=True)
class ParallelOnCpu:
    node: cst.CSTNode       # the wrapper call, or the DDP construction
    module: Operand
    wrapper: str            # "DataParallel", "DistributedDataParallel"
    #: DDP given `device_ids` for a module on a device chosen by availability: on a machine without
    #: a GPU the module is on the CPU, and DDP refuses GPU ids for a CPU module
    without_gpu: bool = False


@dataclass(frozen=True)
class DeviceIdsMismatch:
    node: cst.CSTNode       # the DataParallel/DDP construction
    module: Operand
    first_id: Optional[int]
    per_rank: str = ""      # device_ids=[NAME]: each rank's own GPU, against a module on one constant GPU
    default_ids: bool = False  # DataParallel without device_ids: all GPUs, from GPU 0
    #: device_ids a list the analysis cannot read the first GPU of (`[i for i in args.gpus if ...]`),
    #: against a module on one constant GPU: the expression, for the message
    unread_ids: str = ""
    #: the wrap, when the finding is where the wrapper moved afterwards (`DataParallel(m, ids).cuda()`)
    wrap: Optional[cst.CSTNode] = None


@dataclass(frozen=True)
class OptimizerBeforeMove:
    node: cst.CSTNode       # the optimizer construction or `load_state_dict` call
    optimizer: str          # the optimizer's class, for messages
    move: cst.CSTNode       # where the model moves afterwards
    state: bool             # state exists on the CPU (loaded, or an eager-state optimizer)
    #: built on one of several modules (`{k: Adam(n.parameters()) for k, n in nets.items()}`):
    #: moving this one module up would not fix the others
    of_several: bool = False
    #: built on a tensor itself (`Adam([log_alpha])`) that `.to()` then copied: `node` is the copy,
    #: which the optimizer never updates
    copied_tensor: bool = False
    #: the state was loaded inside a helper this function handed the optimizer to: `node` is that
    #: call, this the `load_state_dict` in the helper (for messages)
    loaded_inside: Optional[cst.CSTNode] = None


@dataclass(frozen=True)
class VisibleDevicesTooLate:
    node: cst.CSTNode       # the assignment to CUDA_VISIBLE_DEVICES
    initialised: cst.CSTNode  # the first CUDA call before it


@dataclass(frozen=True)
class WrapperAttribute:
    """An attribute read on a model that is a DataParallel/DDP wrapper on some path and not on another
    (or on every path), where that side lacks it: AttributeError on the machines that take that path."""
    node: cst.CSTNode       # the attribute expression (`model.config`, `model.module`)
    model: Operand          # the model it is read from
    attr: str
    #: "wrapper": the wrapper lacks it (the module's own attribute, read without `.module`);
    #: "bare": the unwrapped module lacks it (`.module` where the model may not be wrapped)
    lacking: str
    wrapped_at: Optional[cst.CSTNode]  # the wrap
    #: `getattr(model, "device", torch.device("cpu"))`: no AttributeError, the wrapper gives this instead
    fallback: Optional[cst.CSTNode] = None


@dataclass(frozen=True)
class StateDictPrefixMismatch:
    """`load_state_dict` of a state dict whose keys carry DataParallel/DDP's `module.` prefix into a
    bare module, or of a bare module's state dict into a wrapper: missing and unexpected keys."""
    node: cst.CSTNode       # the load_state_dict call
    model: Operand          # the module loading it
    state: Operand          # the state dict
    wrapped_at: cst.CSTNode  # the wrap that adds the prefix (of the saved model or of the loading one)
    #: the state dict carries the prefix (True) or the loading model expects it (False)
    prefixed_state: bool


@dataclass(frozen=True)
class MoveBeforeWrap:
    node: cst.CSTNode       # the DataParallel(...) call
    move: cst.CSTNode       # the earlier `.cuda()`/`.to()`


@dataclass
class DistributedEvidence:
    """File-wide evidence for DEV205: does every rank pick its own GPU?"""
    setup: Optional[cst.CSTNode] = None         # init_process_group (here or in a project helper)
    requires_accelerator: bool = False          # NCCL, or DDP with device_ids
    set_device: bool = False                    # torch.cuda.set_device(...): plain "cuda" is this rank's GPU
    shared_placements: List[cst.CSTNode] = field(default_factory=list)  # placements on "cuda" with no index
    #: some placement picks a GPU per rank (`f"cuda:{local_rank}"`): the code knows how its ranks
    #: place work, and a plain "cuda" elsewhere is its single-process path (`if args.use_ddp: ... else:`)
    per_rank_placements: bool = False


# --- portability (DEV3xx) -------------------------------------------------------

@dataclass
class Requirements:
    """What the program needs anyway, so a finding asking for it would be wrong.

    Sets hold the identities (`id`) of the calls concerned, recorded when the analysis meets them.
    """
    cuda_by_nature: Optional[cst.CSTNode] = None  # a call into a CUDA-only library: the program needs CUDA
    cuda_only_code: Set[int] = field(default_factory=set)  # CUDA-only calls in code that runs only with CUDA
    own_checkpoints: Set[int] = field(default_factory=set)  # torch.load of a file this scope wrote before
    #: torch.load calls whose result is device state: restored into a module or optimizer, placed or
    #: run as a model, or read from a path named like a checkpoint (others hold what the program
    #: saved for itself: scheduler numbers, caches, vocabularies)
    device_state_loads: Set[int] = field(default_factory=set)
    in_place_moves: Set[int] = field(default_factory=set)  # `.to()` of a BatchEncoding: it moves in place
    checkpoints_written: Set[tuple] = field(default_factory=set)  # (class, function, path text) of torch.save
    #: top-level functions that start a process group, and its backend ("nccl", "gloo", ...)
    group_backends: Dict[str, str] = field(default_factory=dict)
    #: the file offers a way to run without CUDA (an availability check, a CPU or a chosen device):
    #: only then is an unguarded CUDA-only call a portability bug rather than the code's nature
    runs_without_cuda: bool = False
    #: CUDA-only calls in code that itself offers a CPU path (an availability check or a CPU device
    #: in its function, a device chosen by availability in scope): there, the call is a portability
    #: bug; elsewhere in the file it may be GPU code by nature (a capability query, a TensorRT build)
    cpu_capable_calls: Set[int] = field(default_factory=set)
    #: the project's process setup raises where CUDA is missing (here or in another file of it)
    setup_needs_cuda: bool = False


@dataclass(frozen=True)
class UnguardedAccelerator:
    root: cst.CSTNode       # where the accelerator was asked for: the string, torch.device(...), `.cuda()`
    use: cst.CSTNode        # the placement that needs it
    chosen_device: str = ""  # a device the code chose elsewhere (DEV305), or ""
    bare_cuda: bool = False  # the root is a `.cuda()` call

    @property
    def node(self) -> cst.CSTNode:
        """Where it is reported (a default `device="cuda"` is reported there, with the call that left
        it to the default)."""
        return self.root


@dataclass(frozen=True)
class ApiMisuse:
    """A single call or reference that is wrong by itself (DEV302, DEV303, DEV304, DEV306)."""
    node: cst.CSTNode
    kind: str               # one of the constants below
    api: str                # the API, for messages
    device: str = ""        # a device the code chose, in scope here (for a fix), or ""


AVAILABILITY_NOT_CALLED = "availability-not-called"
ACCELERATOR_DEFAULT = "accelerator-default"
LOAD_WITHOUT_MAP_LOCATION = "load-without-map-location"
UNGUARDED_CUDA_API = "unguarded-cuda-api"


# --- hot path (DEV4xx) ------------------------------------------------------------

@dataclass(frozen=True)
class HostSync:
    node: cst.CSTNode       # the call, test or f-string that waits for the accelerator
    tensor: Operand
    how: str                # ".item()", "float()", "if", ...
    per_item: bool = False  # in a loop over the items of one step (`for i in range(batch_size)`)
    per_token: bool = False  # read once per iteration of a generation loop
    collected: bool = False  # ... to be kept (`tokens.append(nxt.item())`)


#: the `how` of a sync that is a branch or loop deciding on a tensor's truth
TRUTH_TESTS = frozenset({"if", "while"})


@dataclass(frozen=True)
class HotPathWaste:
    """Per-step work that belongs outside the step (DEV402, DEV403, DEV406)."""
    node: cst.CSTNode
    kind: str
    subject: Operand
    detail: str = ""
    #: DEV403: where the numpy work happened, when that is another line (a helper's body)
    work: Optional[cst.CSTNode] = None


CREATED_THEN_MOVED = "created-then-moved"
#: a CPU tensor an object keeps, copied to the device again on every step
FIELD_COPIED_EACH_STEP = "field-copied-each-step"
HOST_PREPROCESSING = "host-preprocessing"
#: a batch or frame worked on with numpy (arithmetic, `astype`) then made a tensor, every step
HOST_WORK_CONVERTED = "host-work-converted"
MODEL_MOVED_IN_LOOP = "model-moved-in-loop"


@dataclass(frozen=True)
class LoaderFeed:
    """A DataLoader whose batches are moved to an accelerator."""
    loader: cst.CSTNode     # the DataLoader(...) construction
    move: cst.CSTNode       # the `.to()` that moves a batch
    pinned: Optional[bool]  # pin_memory: True/False, None when not literal
    workers: Optional[bool]  # num_workers > 0: True/False, None when not literal
    non_blocking: bool
    training: bool = False  # the move sits in a training loop (backward / optimizer.step)
    explicit_no_workers: bool = False  # `num_workers=0` is written out: a choice, not a default


@dataclass
class FileFacts:
    mismatches: List[DeviceMismatch] = field(default_factory=list)
    discarded_moves: List[DiscardedMove] = field(default_factory=list)
    host_conversions: List[HostConversion] = field(default_factory=list)
    unregistered_state: List[UnregisteredState] = field(default_factory=list)
    parallel_on_cpu: List[ParallelOnCpu] = field(default_factory=list)
    device_ids_mismatches: List[DeviceIdsMismatch] = field(default_factory=list)
    optimizers_before_move: List[OptimizerBeforeMove] = field(default_factory=list)
    visible_devices_late: List[VisibleDevicesTooLate] = field(default_factory=list)
    moves_before_wrap: List[MoveBeforeWrap] = field(default_factory=list)
    wrapper_attributes: List[WrapperAttribute] = field(default_factory=list)
    state_dict_prefixes: List[StateDictPrefixMismatch] = field(default_factory=list)
    distributed: DistributedEvidence = field(default_factory=DistributedEvidence)
    requirements: Requirements = field(default_factory=Requirements)
    unguarded: List[UnguardedAccelerator] = field(default_factory=list)
    misuses: List[ApiMisuse] = field(default_factory=list)
    host_syncs: List[HostSync] = field(default_factory=list)
    waste: List[HotPathWaste] = field(default_factory=list)
    loader_feeds: List[LoaderFeed] = field(default_factory=list)
    #: facts found only while a function ran for one call: id(fact) -> (callee, call) pairs,
    #: innermost call first
    callers: Dict[int, Tuple[Tuple[str, cst.CSTNode], ...]] = field(default_factory=dict)
    #: the same by id(node), for findings (see `caller_chains`), set once all facts are in
    chains: Dict[int, Tuple[Tuple[str, cst.CSTNode], ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(bool(getattr(self, name)) for name in _FACT_LISTS) or bool(self.distributed.shared_placements)


_FACT_LISTS = tuple(name for name in FileFacts.__dataclass_fields__
                    if name not in ("distributed", "requirements", "callers", "chains"))
#: facts that hold for a value a caller passed in or the heat of the caller's loop: their messages
#: name the call they depend on
CALLER_DEPENDENT = ("mismatches", "host_conversions", "parallel_on_cpu", "device_ids_mismatches", "wrapper_attributes",
                    "state_dict_prefixes", "host_syncs", "waste", "unguarded", "misuses")


def fact_counts(facts: FileFacts) -> Dict[str, int]:
    return {name: len(getattr(facts, name)) for name in CALLER_DEPENDENT}


def note_callers(facts: FileFacts, since: Dict[str, int], callee: str, call: cst.CSTNode,
                 outer_only: bool = False) -> None:
    """The facts recorded since `since` were found while `callee` ran for `call`. With `outer_only`
    (a call from the module's own code, which is no condition), only facts that already depend on
    a call deeper down get this one as the outer end of their chain."""
    for name, count in since.items():
        for fact in getattr(facts, name)[count:]:
            known = facts.callers.get(id(fact), ())
            if known or not outer_only:
                facts.callers[id(fact)] = known + ((callee, call),)


def caller_chains(facts: FileFacts) -> Dict[int, Tuple[Tuple[str, cst.CSTNode], ...]]:
    """id(node) -> the call chain a finding there depends on. A node where some fact holds on its
    own (found outside any call) has no chain."""
    chains: Dict[int, Tuple[Tuple[str, cst.CSTNode], ...]] = {}
    unconditional = set()
    for name in CALLER_DEPENDENT:
        for fact in getattr(facts, name):
            found = facts.callers.get(id(fact), ())
            if not found:
                unconditional.add(id(fact.node))
            else:
                chains.setdefault(id(fact.node), found)
    return {key: chain for key, chain in chains.items() if key not in unconditional}
