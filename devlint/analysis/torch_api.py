"""What devlint knows about the torch API (and its neighbours), as data.

The interpreter asks these tables about fully qualified names such as
``torch.zeros`` or ``torch.nn.functional.cross_entropy`` and about tensor
method names; no other module hard-codes API names.
"""
from __future__ import annotations

import re
import sys
from typing import Optional

from .lattice import CPU, CUDA, META, MPS, XPU, Device

# --- tensor creation ----------------------------------------------------------

#: ``torch.<name>(...)`` creates a tensor on ``device=`` or the default device.
FACTORIES = frozenset({
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
    "arange", "range", "linspace", "logspace", "eye", "tensor", "as_tensor",
    "scalar_tensor", "empty_strided", "tril_indices", "triu_indices",
    "bartlett_window", "hann_window", "hamming_window", "blackman_window",
    "kaiser_window", "asarray",
})
#: ``torch.<name>(x, ...)`` creates a tensor on x's device unless ``device=``.
LIKE_FACTORIES = frozenset({
    "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
    "randn_like", "randint_like",
})
#: Constructors that always build on the CPU.
HOST_FACTORIES = frozenset({
    "from_numpy", "frombuffer", "Tensor", "FloatTensor", "DoubleTensor",
    "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
    "ByteTensor", "CharTensor", "BoolTensor",
})
#: ``t.<name>(...)`` builds a new tensor on t's device unless ``device=``.
NEW_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
#: Factories that generate their values (rather than copy host data): made on the CPU and then
#: moved, they cost an allocation and a copy that `device=` avoids entirely (DEV402).
GENERATING_FACTORIES = FACTORIES - frozenset({"tensor", "as_tensor", "asarray", "scalar_tensor"})
#: Factories that copy host data into a new CPU tensor: followed by `.to(device)` each step, that
#: is two copies where `torch.as_tensor(data, device=device)` makes one.
COPYING_FACTORIES = frozenset({"tensor", "as_tensor", "asarray", "from_numpy"})
#: Methods whose keyword (or first positional) argument must be on the receiver's device.
PAIRED_ARGUMENT_METHODS = {"backward": "gradient"}
#: In-place tensor methods that are no operations between two tensors: they return the receiver.
NOT_IN_PLACE = frozenset({"register_hook", "share_memory_"})


def is_in_place_method(name: str) -> bool:
    """`zero_`, `fill_`, `normal_`, `clamp_`...: the result is the receiver itself."""
    return name.endswith("_") and not name.startswith("_") and name not in NOT_IN_PLACE


#: Factories that take no `device=` (they share the host memory they are given).
FACTORIES_WITHOUT_DEVICE = frozenset({"from_numpy", "frombuffer", "from_dlpack"})
#: numpy array methods whose result is the same data, reshaped or converted: it keeps the origin.
NUMPY_SAME_DATA_METHODS = frozenset({
    "astype", "reshape", "transpose", "copy", "squeeze", "swapaxes", "flatten", "ravel", "clip",
    "view", "round", "__array__",
})
#: tensor methods that give the same data reshaped, viewed or converted: a kept CPU tensor
#: passed through them and then moved is still that tensor copied (`self.ids.unsqueeze(0).to(dev)`)
TENSOR_SAME_DATA_METHODS = frozenset({
    "unsqueeze", "squeeze", "expand", "expand_as", "view", "view_as", "reshape", "reshape_as", "repeat", "flatten",
    "t", "transpose", "permute", "contiguous", "clone", "detach", "float", "double", "half", "bfloat16", "long",
    "int", "bool", "type_as",
})
#: tensor methods whose result has a dimension (as many as they are given): no 0-dim tensor comes out.
DIMENSION_ADDING_METHODS = frozenset({"unsqueeze", "expand", "expand_as"})
#: numpy functions that only assemble or lay out data (a batch of frames): no work on it.
NUMPY_ASSEMBLY = frozenset("numpy." + name for name in (
    "stack", "concatenate", "vstack", "hstack", "array", "asarray", "ascontiguousarray", "expand_dims",
    "transpose", "moveaxis", "squeeze", "reshape",
))
#: Of those, the ones that compute (a dtype conversion, clipping): host work on each batch.
NUMPY_WORK_METHODS = frozenset({"astype", "clip", "round"})
#: Factories that draw random numbers: made on the device they draw from its own generator, so the
#: values differ from those drawn on the CPU (a fix that moves their creation is unsafe).
RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm"})
#: The size argument of these factories makes a 0-dim tensor only when empty.
SCALAR_FACTORIES = frozenset({"tensor", "as_tensor", "scalar_tensor", "asarray"})

# --- tensor methods ---------------------------------------------------------

#: Methods that move a tensor (returning a new one) or a module (in place).
MOVE_METHODS = frozenset({"to", "cuda", "cpu", "mps", "xpu", "to_empty"})
#: Methods whose result lives on the host, not on a device.
HOST_RESULT_METHODS = frozenset({
    "item", "tolist", "numpy", "size", "dim", "ndimension", "numel",
    "nelement", "element_size", "get_device", "is_contiguous", "data_ptr",
    "stride", "storage_offset", "is_floating_point", "is_complex", "__len__",
})
#: Methods that turn a tensor into a numpy array (fail on accelerator tensors).
TO_NUMPY_METHODS = frozenset({"numpy", "__array__"})
#: Reductions: their result may be 0-dim, which mixes with accelerator tensors.
REDUCTIONS = frozenset({
    "sum", "mean", "prod", "max", "min", "amax", "amin", "norm", "std", "var",
    "all", "any", "argmax", "argmin", "median", "logsumexp", "nansum",
    "nanmean", "count_nonzero", "dot", "trace", "det",
})
#: Tensor methods that combine the receiver with tensor arguments.
OPERAND_METHODS = frozenset({
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder",
    "fmod", "pow", "matmul", "mm", "bmm", "mv", "dot", "addmm", "addbmm",
    "baddbmm", "addmv", "addcmul", "addcdiv", "eq", "ne", "lt", "le", "gt",
    "ge", "maximum", "minimum", "fmax", "fmin", "masked_fill", "masked_select",
    "masked_scatter", "where", "lerp", "dist", "cross", "kron", "outer",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_xor", "atan2", "hypot", "index_add", "index_copy", "index_fill",
    "scatter", "scatter_add", "scatter_reduce", "gather", "take_along_dim",
    "add_", "sub_", "mul_", "div_", "pow_", "masked_fill_", "index_add_",
    "index_copy_", "scatter_", "scatter_add_", "addcmul_", "addcdiv_", "lerp_",
    "clamp", "clamp_", "clip", "isclose", "allclose", "equal",
})
#: Densities of a `torch.distributions` object: the value meets the distribution's parameters.
DISTRIBUTION_OPERAND_METHODS = frozenset({"log_prob", "cdf", "icdf"})
OPERAND_METHODS = OPERAND_METHODS | DISTRIBUTION_OPERAND_METHODS
#: Elementwise arithmetic: a 0-dim CPU tensor may be an operand.
ARITHMETIC_METHODS = frozenset({
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder",
    "fmod", "pow", "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum",
    "add_", "sub_", "mul_", "div_", "pow_", "masked_fill", "masked_fill_",
    "where", "lerp", "lerp_", "clamp", "clamp_", "clip", "atan2", "hypot",
}) | DISTRIBUTION_OPERAND_METHODS
#: Methods returning a tuple/list of tensors on the receiver's device.
SPLITTING_METHODS = frozenset({"chunk", "split", "unbind", "tensor_split", "split_with_sizes", "topk", "sort", "max", "min"})
#: Tensor attributes that are host values.
HOST_ATTRIBUTES = frozenset({
    "shape", "dtype", "ndim", "is_cuda", "is_mps", "requires_grad", "is_leaf",
    "layout", "names", "itemsize", "nbytes", "is_sparse", "is_quantized",
    "is_cpu", "is_meta", "is_nested", "grad_fn", "output_nr",
    "name",  # (not a tensor attribute: a name some code attached, `f"Gradients {param.name}"`)
})
#: Tensor attributes that say whether it is on one accelerator: the device kinds for which they
#: are surely true and surely false (`if y.is_cuda:` on a CPU tensor is decided).
DEVICE_FLAG_ATTRIBUTES = {"is_cuda": (frozenset({"cuda", "unguarded"}), frozenset({"cpu"}))}


def device_flag(attribute: str, device_kind: str) -> Optional[bool]:
    """`t.is_cuda` for a tensor on `device_kind`: True, False, or None when it cannot be told
    (the selected accelerator, a device variable, an unknown device)."""
    true, false = DEVICE_FLAG_ATTRIBUTES.get(attribute, ((), ()))
    if device_kind in true:
        return True
    return False if device_kind in false else None

# --- modules ----------------------------------------------------------------

#: Base classes that make a class an ``nn.Module``.
#: Base names that make a class an nn.Module even when imported from elsewhere.
MODULE_BASE_NAMES = ("Module", "PreTrainedModel", "LightningModule", "ModelMixin")
#: Losses whose targets and lengths may stay on the CPU (cuDNN's CTC even wants them there): only
#: the first input, the log-probabilities, must be on the device. Class and functional names.
HOST_TARGET_LOSSES = frozenset({"CTCLoss", "ctc_loss"})
#: Bases that make a class surely no module: datasets, samplers, test cases (their objects are
#: plain objects of the file, whose methods run in context).
NON_MODULE_BASES = frozenset({
    "torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset", "torch.utils.data.IterableDataset",
    "torch.utils.data.dataset.IterableDataset", "torch.utils.data.Sampler", "torch.utils.data.sampler.Sampler",
    "unittest.TestCase", "abc.ABC",
})
#: the dataclass field specifiers whose `default=` / `default_factory=` is what an unset field holds
FIELD_DEFAULTS = frozenset({"dataclasses.field", "attr.ib", "attrs.field"})
#: library classes that make a dict as `dict()` does (`log_vars = OrderedDict()` filled per loss)
DICT_CONSTRUCTORS = frozenset({"collections.OrderedDict"})
#: Builtin mappings a class may extend (`class BatchEncoding(dict)`): built from a dict, it holds that
#: dict's items. A subclass that redefines a lookup method may hold anything.
MAPPING_BASES = frozenset({"dict", "collections.OrderedDict", "collections.UserDict", "typing.Dict", "OrderedDict"})
#: Those of them that are `dict` subclasses: `isinstance(batch, dict)` holds for a class extending
#: one, and fails for one extending `UserDict`, which wraps a dict instead (transformers' BatchEncoding).
DICT_SUBCLASS_BASES = frozenset({"dict", "collections.OrderedDict", "typing.Dict", "OrderedDict"})
#: Abstract types every mapping satisfies (`isinstance(batch, Mapping)`).
MAPPING_ABCS = frozenset({"collections.abc.Mapping", "typing.Mapping", "collections.abc.MutableMapping",
                          "typing.MutableMapping"})
#: Objects whose attributes are the keywords they are built with.
NAMESPACES = frozenset({"types.SimpleNamespace", "argparse.Namespace"})
#: Methods that make a namespace object of values the analysis does not know (command-line options).
NAMESPACE_METHODS = frozenset({"parse_args"})
#: dict methods that change what some key holds: per-key values are forgotten
DICT_MUTATORS = frozenset({"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"})
#: Methods that make a dict subclass more than the dict it was built from (its own lookups or construction).
MAPPING_OVERRIDES = frozenset({"__getitem__", "get", "items", "values", "__iter__", "__missing__", "__init__", "__new__"})
#: Bases that add nothing to what `nn.Module` answers (`class Net(nn.Module)`).
PLAIN_MODULE_BASES = frozenset({"nn.Module", "torch.nn.Module", "Module", "object"})
MODULE_BASES = frozenset({
    "torch.nn.Module", "torch.nn.modules.module.Module",
    "pytorch_lightning.LightningModule", "lightning.LightningModule",
    "lightning.pytorch.LightningModule", "transformers.PreTrainedModel",
    "transformers.modeling_utils.PreTrainedModel",
})
#: ``torch.nn`` classes without parameters or buffers: calling one mixes its
#: inputs with each other only.
STATELESS_NN_CLASSES = frozenset({
    "Identity", "Flatten", "Unflatten", "ReLU", "ReLU6", "LeakyReLU", "ELU",
    "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softmax",
    "Softmax2d", "LogSoftmax", "Softmin", "Softplus", "Softsign", "Hardtanh",
    "Hardswish", "Hardsigmoid", "Hardshrink", "Softshrink", "Tanhshrink",
    "LogSigmoid", "Threshold", "GLU", "Dropout", "Dropout1d", "Dropout2d",
    "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "MaxPool1d",
    "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
    "LPPool1d", "LPPool2d", "Upsample", "UpsamplingNearest2d",
    "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle",
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
    "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
    "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
    "CosineSimilarity", "PairwiseDistance", "Fold", "Unfold",
})
#: Loss classes are stateless unless given a ``weight``/``pos_weight`` tensor.
LOSS_SUFFIX = "Loss"
LOSS_WEIGHT_KEYWORDS = frozenset({"weight", "pos_weight"})
#: Containers whose statefulness is that of their children.
CONTAINER_NN_CLASSES = frozenset({"Sequential", "ModuleList", "ModuleDict"})
#: ``torch.nn`` names that are not module classes.
NON_MODULE_NN_NAMES = frozenset({"Parameter", "UninitializedParameter", "Buffer", "ParameterList", "ParameterDict"})
#: Wrappers that register a tensor on the module they are assigned to (`nn.Buffer` since torch 2.5).
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                               "torch.nn.parameter.Buffer"})
DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"})
DISTRIBUTED_DATA_PARALLEL = frozenset({
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
})
#: Calls that return a model with parameters on the CPU.
MODEL_FACTORY_PREFIXES = ("torchvision.models.", "timm.create_model", "timm.models.")
#: Hugging Face classes: loaded with ``from_pretrained``.
HF_ROOTS = ("transformers.", "diffusers.", "peft.", "sentence_transformers.")
HF_TOKENIZER_WORDS = ("Tokenizer", "Processor", "FeatureExtractor")
HF_MODEL_WORDS = ("Model", "For", "Transformer")
#: The class a `from_pretrained` model is known by: its `generate` returns token ids on its device.
PRETRAINED_MODEL = "pretrained model"
#: diffusers/transformers pipelines are not modules: they place their components themselves and
#: return images (PIL, numpy) or python objects, not tensors on the model's device
HF_PIPELINE_WORDS = ("Pipeline",)

# --- data, loading, devices -----------------------------------------------------

#: Wrappers that return their first argument unchanged (legacy autograd Variables).
#: Calls that give back their first argument, or a module over the same parameters: it is where
#: that argument is, and moving one moves the other (`model = torch.jit.script(model)`).
#: `functools.partial(cls, lr=...)`: calling it calls `cls` (with those keywords too).
PARTIALS = frozenset({"functools.partial"})
#: Copies: a new object where the original is now (an EMA copy of a model taken before it moved stays
#: behind when the model moves).
COPIES = frozenset({"copy.deepcopy", "copy.copy"})
#: `dataclasses.field(default=...)` / `field(default_factory=...)` in a dataclass body: the default.
DATACLASS_FIELDS = frozenset({"dataclasses.field"})
IDENTITY_WRAPPERS = frozenset({
    "torch.autograd.Variable", "torch.autograd.variable.Variable",
    "torch.compile", "torch.jit.script", "torch.jit.trace",
})
#: torch.nn classes whose extra inputs are state that must share the device (h0, c0).
RECURRENT_NN_CLASSES = frozenset({"LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"})
#: Methods of training frameworks (accelerate, Lightning Fabric) whose results the
#: framework places itself: loaders they return yield batches already on the device.
FRAMEWORK_PLACING_METHODS = frozenset({"prepare", "prepare_data_loader", "prepare_model", "setup", "setup_dataloaders"})
#: Methods of library model classes (diffusers, accelerate, transformers) that install hooks which
#: move the module's weights at call time: after them, where the module is is the library's business.
OFFLOAD_METHODS = frozenset({
    "enable_model_cpu_offload", "enable_sequential_cpu_offload", "enable_group_offload",
    "enable_layerwise_casting", "enable_xformers_memory_efficient_attention", "dispatch_model",
    "to_empty", "enable_cpu_offload", "set_device_map", "parallelize", "deparallelize",
})
#: A forward hook may move the module's weights when it runs (accelerate's AlignDevicesHook).
FORWARD_HOOK_REGISTRATIONS = frozenset({"register_forward_pre_hook", "register_forward_hook"})
#: Attributes of a pipeline's or model's output that hold images or text, never device tensors.
HOST_OUTPUT_ATTRIBUTES = frozenset({"images", "audios", "frames", "videos", "text", "nsfw_content_detected"})
#: Types whose `isinstance` test says a module is wrapped in DataParallel / DDP where it holds.
PARALLEL_WRAPPER_TYPES = frozenset(prefix + name for name in ("DataParallel", "DistributedDataParallel")
                                   for prefix in ("", "nn.", "nn.parallel.", "torch.nn.", "torch.nn.parallel.")) | {"DDP"}
#: What every `nn.Module` answers itself (methods and the `training` flag): any other attribute of a
#: `ModuleDict` is one of its parts.
MODULE_API_ATTRIBUTES = frozenset({
    "add_module", "apply", "bfloat16", "buffers", "children", "compile", "cpu", "cuda", "double", "dump_patches",
    "eval", "extra_repr", "float", "forward", "get_buffer", "get_extra_state", "get_parameter", "get_submodule",
    "half", "ipu", "load_state_dict", "modules", "mtia", "named_buffers", "named_children", "named_modules",
    "named_parameters", "parameters", "register_backward_hook", "register_buffer", "register_forward_hook",
    "register_forward_pre_hook", "register_full_backward_hook", "register_full_backward_pre_hook",
    "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook", "register_module",
    "register_parameter", "register_state_dict_post_hook", "register_state_dict_pre_hook", "requires_grad_",
    "set_extra_state", "set_submodule", "share_memory", "state_dict", "to", "to_empty", "train", "training",
    "type", "xpu", "zero_grad", "call_super_init", "T_destination",
    # ModuleDict / ModuleList / Sequential
    "keys", "values", "items", "update", "pop", "clear", "append", "extend", "insert",
})
#: What a DataParallel / DistributedDataParallel wrapper answers itself: the `nn.Module` API and the
#: wrapper's own settings. Any other public attribute read through the wrapper (`model.config`,
#: `model.generate`) is the wrapped module's, and raises AttributeError there.
DATA_PARALLEL_OWN_ATTRIBUTES = MODULE_API_ATTRIBUTES | frozenset({
    "module", "device_ids", "output_device", "dim", "src_device_obj", "gather", "scatter", "replicate",
    "parallel_apply",
})
#: DDP answers more itself, its `device` among them (DataParallel has none: `model.device` of a
#: DataParallel-wrapped Hugging Face model raises).
WRAPPER_OWN_ATTRIBUTES = DATA_PARALLEL_OWN_ATTRIBUTES | frozenset({
    "device_type", "process_group",
    "broadcast_buffers", "find_unused_parameters", "gradient_as_bucket_view", "static_graph", "no_sync", "join",
    "join_hook", "join_device", "join_process_group", "register_comm_hook", "reducer", "logger",
    "require_backward_grad_sync", "require_forward_param_sync", "bucket_bytes_cap", "mixed_precision",
    "gather", "scatter", "replicate", "parallel_apply", "will_sync_module_buffers", "device",
})
#: The attribute a wrapper keeps the wrapped module in.
WRAPPED_MODULE_ATTRIBUTE = "module"
#: Types whose `isinstance` test says the value is a tensor (and, where it fails, that it is none).
TENSOR_TYPES = frozenset({"torch.Tensor", "Tensor", "torch.nn.Parameter", "nn.Parameter"})
#: The base classes every optimizer and every module is an instance of, as `isinstance` names them.
OPTIMIZER_BASE_TYPES = frozenset({"torch.optim.Optimizer", "optim.Optimizer", "Optimizer"})
MODULE_BASE_TYPES = frozenset({"torch.nn.Module", "nn.Module", "Module"})
#: Calls that test what `isinstance(x, torch.Tensor)` tests.
TENSOR_PREDICATES = frozenset({"torch.is_tensor"})
#: Types whose `isinstance` test says the value is no tensor (on the branch where it holds).
HOST_TYPES = frozenset({
    "numpy.ndarray", "np.ndarray", "ndarray", "PIL.Image.Image", "Image.Image", "list", "tuple", "dict",
    "int", "float", "str", "bool", "numbers.Number", "np.generic", "numpy.generic",
})
DATA_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
#: Datasets that hold the tensors they are given: their batches are wherever those tensors are.
TENSOR_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})
#: The DataLoader keyword that asks for worker processes.
LOADER_WORKER_KEYWORDS = frozenset({"num_workers"})
TORCH_LOAD = frozenset({"torch.load"})
TORCH_SAVE = frozenset({"torch.save"})
#: standard-library calls that build a file path: a save and a load of the path one of them built
#: name the same file
PATH_BUILDERS = frozenset({"os.path.join", "os.path.abspath", "os.path.expanduser", "pathlib.Path"})
#: Keywords of a call that returns a Hugging Face `BatchEncoding` (tokenizers, processors, feature
#: extractors asked for tensors): its `.to()` moves its tensors in place and returns itself.
BATCH_ENCODING_KEYWORDS = frozenset({"return_tensors"})
#: Callees named like a tokenizer or processor: what they return is a `BatchEncoding` too.
_BATCH_ENCODING_CALLEE = re.compile(r"(^|_)(tokenizer|tokeniser|processor|feature_extractor|image_processor)$",
                                    re.IGNORECASE)
OPTIMIZER_PREFIX = "torch.optim."
#: Modules whose classes code picks by a name it reads from its settings
#: (`getattr(torch.optim, cfg.name)(model.parameters())`): the class is one of this family.
CLASSES_PICKED_BY_NAME = {"torch.optim": "torch.optim.Optimizer", "torch.nn": "torch.nn.Module"}
#: Classes under torch.optim that are not optimizers (their `step()` is no training step).
NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
DEVICE_CONSTRUCTORS = frozenset({"torch.device"})
AVAILABILITY_CHECKS = frozenset({
    "torch.cuda.is_available", "torch.backends.mps.is_available",
    "torch.mps.is_available", "torch.xpu.is_available",
    "torch.accelerator.is_available", "torch.cuda.device_count",
    "torch.accelerator.device_count", "torch.backends.mps.is_built",
})
#: Questions about the GPU's abilities that answer False (rather than fail) without CUDA: the side of a
#: test on them where they fail runs on CPU-only machines too.
CUDA_CAPABILITY_QUERIES = frozenset({"torch.cuda.is_bf16_supported"})
#: Calls returning the accelerator chosen at run time (or the CPU).
SELECTED_DEVICE_CALLS = frozenset({"torch.accelerator.current_accelerator"})
SET_DEFAULT_DEVICE = frozenset({"torch.set_default_device"})
#: Functions over a model's parameters that return their total norm as a 0-dim tensor on the
#: parameters' device (reading it with `.item()` waits for the device).
GRADIENT_NORMS = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.get_total_norm",
                            "torch.nn.utils.clip_grad.clip_grad_norm_"})
SET_DEFAULT_TENSOR_TYPE = frozenset({"torch.set_default_tensor_type"})
#: Host-only libraries: handing them an accelerator tensor fails.
#: Standard-library modules of plain numbers: what their functions give is a Python number (no
#: tensor reaches them on purpose; a 0-dim one is read like `float(t)`).
HOST_NUMBER_MODULES = ("math.", "random.", "statistics.")
HOST_LIBRARY_ROOTS = ("numpy.", "sklearn.", "matplotlib.", "PIL.", "cv2.", "pandas.", "scipy.", "seaborn.")
#: Iteration wrappers that yield what their (first) argument yields.
PASS_THROUGH_ITERATORS = frozenset({"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "iter", "list", "tuple", "sorted", "reversed"})

#: ``torch.<name>`` calls that are not tensor ops.
NON_OPS = frozenset({
    "save", "load", "manual_seed", "seed", "no_grad", "enable_grad",
    "inference_mode", "set_grad_enabled", "is_tensor", "is_storage", "numel",
    "device", "set_default_device", "set_default_dtype", "get_default_dtype",
    "set_default_tensor_type", "set_printoptions", "compile", "jit",
    "is_grad_enabled", "use_deterministic_algorithms", "set_num_threads",
    "get_num_threads", "set_float32_matmul_precision", "autocast", "typename",
    "is_floating_point", "is_complex", "get_rng_state", "set_rng_state",
    "initial_seed", "finfo", "iinfo", "Size", "Generator", "broadcast_shapes",
    "multi_head_attention_forward",  # takes placeholder tensors it never combines
})
#: Namespaces under torch whose functions are tensor ops.
OP_NAMESPACES = ("torch.", "torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")
#: torch namespaces that are not ops (checked before OP_NAMESPACES).
NON_OP_NAMESPACES = (
    "torch.cuda.", "torch.backends.", "torch.distributed.", "torch.utils.",
    "torch.optim.", "torch.nn.init.", "torch.onnx.", "torch.jit.",
    "torch.autograd.", "torch.hub.", "torch.multiprocessing.", "torch.mps.",
    "torch.accelerator.", "torch.amp.", "torch.profiler.", "torch.testing.",
    "torch.nn.utils.", "torch.xpu.", "torch.compiler.", "torch.export.",
)
#: torch functions whose operands may legally be a 0-dim CPU tensor.
ARITHMETIC_FUNCTIONS = frozenset({
    "add", "sub", "mul", "div", "true_divide", "pow", "where", "maximum",
    "minimum", "clamp", "clip", "eq", "ne", "lt", "le", "gt", "ge", "lerp",
    "remainder", "fmod", "atan2", "hypot",
})

_DEVICE_STRING = re.compile(r"^(cpu|cuda|mps|xpu|meta)(?::(\d+))?$")
_ACCEL_KINDS = {"cuda": CUDA, "mps": MPS, "xpu": XPU}
#: Identifiers that conventionally name a device (for symbolic targets).
_DEVICE_NAME = re.compile(r"(^|_)(device|dev|devices|gpu|gpu_id|gpu_ids|rank|local_rank|cuda_device)$", re.IGNORECASE)
#: Identifiers that conventionally name a dtype (`.to(dtype)` is no move).
_DTYPE_NAME = re.compile(r"(^|_)dtype$", re.IGNORECASE)
#: Identifiers that conventionally name a data loader.
_LOADER_NAME = re.compile(r"(loader|(^|_)dl|dataloader|loader_\w+)$", re.IGNORECASE)


def parse_device_string(text: str) -> Optional[Device]:
    """`"cuda:1"` -> cuda:1; anything that is not a device string -> None."""
    match = _DEVICE_STRING.match(text.strip())
    if not match:
        return None
    kind, index = match.group(1), match.group(2)
    if kind == "cpu":
        return CPU
    if kind == "meta":
        return Device(META)
    return Device(_ACCEL_KINDS[kind], int(index) if index is not None else None)


#: Owners whose `.device` attribute is a device the user chose (not "where this tensor is").
_SETTINGS_NAME = re.compile(
    r"^(self|args|cfg|config|conf|opt|opts|options|hparams|hp|params|settings|accelerator|trainer|"
    r"training_args|train_args|model_args|run_args|flags|state|env|model|net|module|fabric|runtime)$",
    re.IGNORECASE)


#: Names that, in training code, are tensors (never modules or batch objects with an in-place `.to`).
_TENSOR_NAME = re.compile(
    r"^(x|y|t|z|xb|yb|tensor|inputs?|labels?|targets?|images?|imgs?|features|feats|logits|tokens|input_ids|"
    r"masks?|weights|noise|scores|preds|predictions|timesteps?|embeddings|"
    r"attention_mask|token_type_ids|pixel_values|(batch|train|val|test)_(x|y|inputs|labels|images|targets))$",
    re.IGNORECASE)


def is_tensor_name(identifier: str) -> bool:
    return bool(_TENSOR_NAME.match(identifier))


def is_settings_name(identifier: str) -> bool:
    return bool(_SETTINGS_NAME.match(identifier))


def is_settings_attribute(key: str) -> bool:
    """`args.device`, `self.device`, `cfg.train.device`: an attribute of settings, a chosen value
    (not `hidden.device`, which is wherever that tensor is)."""
    return "." in key and is_settings_name(key.rsplit(".", 2)[-2])


def is_device_name(identifier: str) -> bool:
    return bool(_DEVICE_NAME.search(identifier))


#: packages besides the standard library whose calls never choose a GPU
HOST_ONLY_PACKAGES = frozenset({"numpy", "builtins"})


def is_standard_library(qualname: str) -> bool:
    """`argparse.ArgumentParser`, `os.environ.get`, `print`: code that chooses no GPU."""
    root = qualname.split(".", 1)[0]
    return "." not in qualname or root in sys.stdlib_module_names or root in HOST_ONLY_PACKAGES


def is_dtype_name(identifier: str) -> bool:
    return bool(_DTYPE_NAME.search(identifier))


def is_loader_name(identifier: str) -> bool:
    return bool(_LOADER_NAME.search(identifier))


def is_dtype(qualname: str) -> bool:
    """`torch.float16`, `torch.long`, ... (a `.to()` argument that is no device)."""
    if not qualname.startswith("torch.") or qualname.count(".") != 1:
        return False
    name = qualname[len("torch."):]
    return name in {
        "float", "double", "half", "bfloat16", "float16", "float32", "float64",
        "int", "long", "short", "int8", "int16", "int32", "int64", "uint8",
        "bool", "complex64", "complex128", "cfloat", "cdouble", "float8_e4m3fn",
        "float8_e5m2",
    }


_DISTRIBUTION_HELPERS = ("constraints", "transforms", "constraint_registry", "kl", "utils")


def is_distribution(qualname: str) -> bool:
    """A `torch.distributions` class: its samples and densities live where its parameters are."""
    if not qualname.startswith("torch.distributions."):
        return False
    parts = qualname.split(".")
    return parts[-1][:1].isupper() and not any(part in _DISTRIBUTION_HELPERS for part in parts[2:-1])


def tensor_type_device(qualname: str) -> Optional[Device]:
    """`torch.cuda.FloatTensor` -> cuda, `torch.FloatTensor` -> cpu."""
    if qualname.startswith("torch.cuda.") and qualname.endswith("Tensor"):
        return Device(CUDA)
    if qualname.startswith("torch.") and qualname.count(".") == 1 and qualname[len("torch."):] in HOST_FACTORIES:
        return CPU
    return None


def is_nn_module_class(qualname: str) -> bool:
    """`torch.nn.Linear` and friends: capitalised classes of torch.nn."""
    if not qualname.startswith("torch.nn.") or qualname.startswith(("torch.nn.functional.", "torch.nn.init.", "torch.nn.utils.")):
        return False
    name = qualname.rsplit(".", 1)[-1]
    return name[:1].isupper() and name not in NON_MODULE_NN_NAMES


def builds_module_state(qualname: str) -> bool:
    """Calls whose tensor arguments become a module's weights: `nn.Parameter(t)`, `nn.Linear(...)`,
    `nn.Embedding.from_pretrained(table)`."""
    if qualname in PARAMETER_CLASSES or is_nn_module_class(qualname):
        return True
    owner, _, name = qualname.rpartition(".")
    return name.startswith("from_") and is_nn_module_class(owner)


#: torch.nn layers whose output is the input itself or may be 0-dim.
_UNSHAPED_OUTPUT_NN_CLASSES = frozenset({"Identity", "Flatten", "Unflatten"})


def nn_output_is_shaped(name: str) -> bool:
    """A torch.nn layer (not a loss) returns a shaped tensor: never a 0-dim one that could meet an
    accelerator tensor legally."""
    return (is_nn_module_class("torch.nn." + name) and not name.endswith(LOSS_SUFFIX)
            and name not in _UNSHAPED_OUTPUT_NN_CLASSES and name not in CONTAINER_NN_CLASSES)


def nn_class_is_stateful(name: str, keywords: frozenset) -> Optional[bool]:
    """Whether a torch.nn class holds parameters or buffers."""
    if name in STATELESS_NN_CLASSES:
        return False
    if name.endswith(LOSS_SUFFIX):
        return bool(keywords & LOSS_WEIGHT_KEYWORDS)
    if name in CONTAINER_NN_CLASSES:
        return None
    return True


def is_op(qualname: str) -> bool:
    """A torch function whose tensor arguments must share one device."""
    if qualname.startswith(NON_OP_NAMESPACES):
        return False
    for namespace in OP_NAMESPACES:
        if qualname.startswith(namespace):
            name = qualname[len(namespace):]
            if "." in name or not name or name[0].isupper():
                continue
            return name not in NON_OPS and name not in FACTORIES and name not in LIKE_FACTORIES
    return False


def is_host_library(qualname: str) -> bool:
    return qualname.startswith(HOST_LIBRARY_ROOTS)


def is_model_factory(qualname: str) -> bool:
    return qualname.startswith(MODEL_FACTORY_PREFIXES) and qualname.rsplit(".", 1)[-1][:1].islower()


def hugging_face_kind(qualname: str) -> Optional[str]:
    """For `transformers.AutoX.from_pretrained`: "tokenizer", "model" or None."""
    if not qualname.startswith(HF_ROOTS) or not qualname.endswith(".from_pretrained"):
        return None
    cls = qualname[: -len(".from_pretrained")].rsplit(".", 1)[-1]
    if any(word in cls for word in HF_TOKENIZER_WORDS):
        return "tokenizer"
    if any(word in cls for word in HF_PIPELINE_WORDS):
        return "pipeline"
    if any(word in cls for word in HF_MODEL_WORDS):
        return "model"
    return None


def is_hugging_face_tokenizer_class(qualname: str) -> bool:
    return qualname.startswith(HF_ROOTS) and any(word in qualname.rsplit(".", 1)[-1] for word in HF_TOKENIZER_WORDS)


#: How many accelerators there are (`torch.cuda.device_count()`, `torch.accelerator.device_count()`):
#: `> 1` splits several GPUs from one, not a GPU from the CPU.
DEVICE_COUNT_FUNCTIONS = (".device_count",)


# --- parallel, portability and hot-path families ---------------------------------

#: Objects made on a device, other than tensors and modules: the position of their device
#: argument (`torch.Generator("cuda")` needs CUDA as `torch.device("cuda")` does).
DEVICE_BOUND_OBJECTS = {"torch.Generator": 0}

#: CUDA-only calls that do nothing when handed None (`torch.cuda.stream(None)` selects no stream)
NO_OP_GIVEN_NONE = frozenset({"torch.cuda.stream"})
#: Functions that raise on a machine without CUDA (lazy CUDA initialisation fails).
#: Tensor methods that need an accelerator: pinning page-locks host memory through the CUDA driver,
#: and raises "Cannot access accelerator device" where there is none.
CUDA_ONLY_TENSOR_METHODS = frozenset({"pin_memory"})
_PIN_OPTION = re.compile(r"pin", re.IGNORECASE)


def names_pinning_option(identifiers) -> bool:
    """`if self._pin_mem:`, `if args.pin_memory and ...`: a test on the program's own pinning option."""
    return any(_PIN_OPTION.search(identifier) for identifier in identifiers)

CUDA_ONLY_APIS = frozenset("torch.cuda." + name for name in (
    "synchronize", "set_device", "current_device", "get_device_name", "get_device_properties",
    "get_device_capability", "mem_get_info", "reset_peak_memory_stats", "Stream", "Event",
    "set_per_process_memory_fraction", "current_stream", "default_stream", "stream",
    "get_arch_list", "ipc_collect", "reset_max_memory_allocated", "get_rng_state", "set_rng_state", "initial_seed",
    # (the same functions under the submodule that defines them)
    "random.get_rng_state", "random.set_rng_state", "random.initial_seed",
))
#: Context managers that make another GPU current for their body.
CURRENT_GPU_CONTEXTS = frozenset({"torch.cuda.device"})
#: Calls that answer with the current GPU's index.
CURRENT_DEVICE_CALLS = frozenset({"torch.cuda.current_device"})
#: Any call under this namespace initialises CUDA (and fixes CUDA_VISIBLE_DEVICES).
CUDA_NAMESPACE = "torch.cuda."
#: torch.cuda functions that never initialise CUDA.
CUDA_LAZY_SAFE = frozenset("torch.cuda." + name for name in (
    "manual_seed", "manual_seed_all", "seed", "seed_all", "empty_cache", "is_initialized",
))
VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
ENVIRONMENT_SETTERS = frozenset({"os.environ.setdefault", "os.environ.update", "os.putenv"})
PROCESS_GROUP_INIT = frozenset({"torch.distributed.init_process_group"})
SET_DEVICE = frozenset({"torch.cuda.set_device"})
#: Optimizers that create their state on construction (Adagrad's `state_sum`).
EAGER_STATE_OPTIMIZERS = frozenset({"Adagrad"})
#: Host libraries that do per-sample preprocessing (DEV403).
PREPROCESSING_ROOTS = ("numpy.", "PIL.", "cv2.", "skimage.", "scipy.ndimage.", "imageio.")
#: Files that hold no device tensors by construction: scheduler and GradScaler states are
#: python numbers, RNG states are CPU byte tensors, metadata and in-memory buffers are local, and
#: processed dataset files hold the CPU tensors a preprocessing step saved.
HOST_STATE_FILE = re.compile(r"sched|scaler|rng|random|meta|config|hparam|vocab|buffer|bytes|BytesIO|processed|dataset", re.IGNORECASE)
#: Paths of files that hold a model's or an optimizer's tensors, saved wherever they were trained.
CHECKPOINT_FILE = re.compile(r"ckpt|checkpoint|model|weight|state_dict|pretrain|resume|snapshot|\.pth\b|\.bin\b|"
                             r"best|latest|(^|\W|_)net", re.IGNORECASE)
#: Methods that restore saved tensors into an object that lives on a device.
STATE_RESTORING_METHODS = frozenset({"load_state_dict", "set_state_dict", "load_state"})
#: Methods of a loaded object that use it as a model: what was loaded was a pickled module.
MODEL_USE_METHODS = frozenset({"eval", "train", "parameters", "named_parameters", "forward", "state_dict"})
#: Tensor methods that wait for the accelerator and copy to the host.
SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})
#: Calls that keep a value for after the loop (`preds.append(out.cpu())`): the copy is the result
#: an evaluation loop exists to collect, not a stall inside its step.
COLLECTING_METHODS = frozenset({"append", "extend", "put"})
#: Builtins that read a tensor's value on the host.
SYNC_BUILTINS = frozenset({"float", "int", "bool", "print"})
#: Class-name suffixes of configuration objects whose `device` field is a default.
CONFIG_CLASS_SUFFIXES = ("Config", "Args", "Arguments", "Options", "Settings", "Params", "Hparams")
#: Libraries that run only on NVIDIA GPUs (FP8 kernels, fused CUDA ops, CUDA bindings): a program
#: built on them needs CUDA by nature, so asking for it without a fallback is no portability bug.
CUDA_ONLY_LIBRARIES = (
    "transformer_engine.", "apex.", "flash_attn.", "xformers.", "triton.", "cupy.", "pycuda.", "tensorrt.",
    "torch_tensorrt.", "nvidia.dali.", "mamba_ssm.", "causal_conv1d.", "flashinfer.", "vllm.", "sglang.",
    "deep_gemm.", "tensorrt_llm.", "cutlass.", "cuda.bindings.", "numba.cuda.",
)
#: Text that shows a file means to run without CUDA too: an availability check, a CPU device,
#: a test of a tensor's or device's type.
#: Text of a file that asks whether an accelerator is there at all.
AVAILABILITY_TEXT = re.compile(r"is_available\(|torch\.accelerator|device_count\(")
#: Calls that set a process up to run on its GPU: where they refuse to run without CUDA, so does the project.
PROCESS_SETUP_CALLS = frozenset({"init_process_group", "set_device"})
#: Text of a file that asks for CUDA itself (a `"cuda"` device, a `.cuda()` move), not only through a
#: framework that places things (`Accelerator(cpu=args.cpu)`).
CUDA_REQUEST_TEXT = re.compile(r"""\.cuda\(|["']cuda""")
#: An availability test anywhere in a file's text: the program really chooses between CUDA and the CPU.
AVAILABILITY_TEXT = re.compile(r"is_available\(|device_count\(|torch\.accelerator")
CPU_PATH_TEXT = re.compile(r"""is_available\(|["']cpu["']|\.type\s*[!=]=|\.is_cuda\b|torch\.accelerator|device_count\(""")
#: The calls among them, as the syntax walk sees them.
CPU_PATH_CALLS = frozenset({"is_available", "device_count"})
#: CUDA objects whose only purpose is CUDA work (timing events, streams, graphs): a helper that
#: builds them is CUDA-only by nature, and whoever calls it decides whether CUDA is there.
CUDA_BY_NATURE_OBJECTS = frozenset("torch.cuda." + name for name in ("Event", "Stream", "CUDAGraph", "graph"))
#: Attributes that exist only once a model was offloaded or dispatched across accelerators
#: (accelerate's `enable_model_cpu_offload`, `device_map=`): a test on them is an implicit guard.
_IMPLICIT_ACCELERATOR_STATE = re.compile(r"offload|hf_device_map|_hf_hook", re.IGNORECASE)
#: Names of a process's rank: a device computed from one picks a GPU per process.
_RANK_NAME = re.compile(r"(^|_)(local_|global_|node_)?rank$", re.IGNORECASE)
#: Decorators and test markers that run a function only where an accelerator exists.
#: (`is_sm_at_least_90()`, `get_device_capability() >= (8, 9)`: a GPU architecture is asked for)
#: Packages that exist only for GPUs: a file that imports one unconditionally (not in a
#: `try`/`except ImportError`) runs only where a GPU is, so its hardcoded "cuda" is by design.
GPU_ONLY_PACKAGES = frozenset({
    "triton", "vllm", "sglang", "flash_attn", "xformers", "apex", "cupy", "pycuda", "tensorrt", "deep_gemm",
    "flashinfer", "transformer_engine", "cutlass", "nvidia", "megatron",
})

_ACCELERATOR_ONLY = re.compile(r"cuda|gpu|accelerat|nccl|multi_?device|distributed|sm_at_least|is_sm_|capability",
                               re.IGNORECASE)


def is_accelerator_only_marker(text: str) -> bool:
    """`@pytest.mark.skipif(not torch.cuda.is_available(), ...)`, `@require_torch_gpu`, ..."""
    return bool(_ACCELERATOR_ONLY.search(text))


_CUDA_CLASS = re.compile(r"cuda|gpu|nccl", re.IGNORECASE)
_ACCELERATOR_WORD = re.compile(r"cuda|gpu|accel|mps|xpu|npu", re.IGNORECASE)


def names_accelerator(identifier: str) -> bool:
    """`gpus`, `args.cuda_devices`: a name for accelerators (not the generic `devices`, which may be ["cpu"])."""
    return bool(_ACCELERATOR_WORD.search(identifier))


def is_cuda_class_name(name: str) -> bool:
    """`CUDAGraphWrapper`, `GpuTimer`: a class whose name says it is for CUDA."""
    return bool(_CUDA_CLASS.search(name))


#: Package names that, anywhere in a dotted path, mark GPU kernels (a project's own
#: `ops.transformer.inference.triton.matmul_ext`).
CUDA_ONLY_PACKAGES = frozenset({"triton"})


def is_cuda_only_library(qualname: str) -> bool:
    return qualname.startswith(CUDA_ONLY_LIBRARIES) or not CUDA_ONLY_PACKAGES.isdisjoint(qualname.split(".")[:-1])


def names_accelerator_state(text: str) -> bool:
    """`final_offload_hook`, `hf_device_map`: state that only accelerator offloading creates."""
    return bool(_IMPLICIT_ACCELERATOR_STATE.search(text))


_CUDA_FLAG = re.compile(r"^-{1,2}(use[_-]?)?(cuda|gpu)$", re.IGNORECASE)
_CPU_FLAG = re.compile(r"^-{1,2}((use|force|only)[_-]?cpu|cpu([_-]?only)?|(no|disable)[_-]?(cuda|gpu))$", re.IGNORECASE)


def is_cpu_flag(flag: str) -> bool:
    """`--cpu`, `--no-cuda`, `--disable-gpu`: a command-line switch that turns the accelerator off."""
    return bool(_CPU_FLAG.match(flag))


def is_cuda_flag(flag: str) -> bool:
    """`--cuda`, `--use-gpu`: a command-line switch that turns the accelerator on."""
    return bool(_CUDA_FLAG.match(flag))


def is_rank_name(text: str) -> bool:
    """`local_rank`, `rank`, `args.local_rank`, `"LOCAL_RANK"`."""
    return bool(_RANK_NAME.search(text.strip("'\"")))


def returns_batch_encoding(callee: str, keywords) -> bool:
    """A call whose result is a `BatchEncoding` (moved in place by `.to()`)."""
    return bool(BATCH_ENCODING_KEYWORDS & set(keywords)) or bool(_BATCH_ENCODING_CALLEE.search(callee))


def argument_destination(flags) -> str:
    """Where argparse stores an option: `--num-workers` -> `num_workers` (the first long flag)."""
    for flag in flags:
        if flag.startswith("--") and len(flag) > 2:
            return flag[2:].replace("-", "_")
    return ""


def loader_option(keyword_value: Optional[object]) -> Optional[bool]:
    """A literal `pin_memory=`/`num_workers=` value as a yes/no; None when not literal."""
    if keyword_value is None:
        return False
    if isinstance(keyword_value, bool):
        return keyword_value
    if isinstance(keyword_value, int):
        return keyword_value > 0
    return None
