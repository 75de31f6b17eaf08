"""The device lattice: joins and conflicts."""
from devlint.analysis.lattice import (
    CPU, SELECTED, UNKNOWN, Device, conflicts, join_devices, symbolic,
)

CUDA0, CUDA1, CUDA = Device("cuda", 0), Device("cuda", 1), Device("cuda")
SEL = Device(SELECTED)
UNGUARDED = Device("unguarded")
META = Device("meta")


def test_join_is_idempotent_and_unknown_absorbs():
    for device in (CPU, CUDA0, SEL, META, symbolic("device")):
        assert join_devices(device, device) == device
        assert join_devices(device, UNKNOWN) == UNKNOWN


def test_join_of_cpu_and_accelerator_depends_on_the_branch():
    assert join_devices(CUDA, CPU) == UNKNOWN
    assert join_devices(CUDA, CPU, availability_split=True) == SEL
    assert join_devices(CPU, UNGUARDED, availability_split=True) == SEL


def test_join_of_accelerators_of_one_kind():
    assert join_devices(CUDA0, CUDA1) == CUDA
    assert join_devices(CUDA, SEL) == SEL
    assert join_devices(Device("mps"), CUDA) == UNKNOWN


def test_conflicts_are_sure_only():
    assert conflicts(CPU, SEL) and conflicts(SEL, CPU)
    assert conflicts(CPU, CUDA0) and conflicts(CPU, symbolic("args.device"))
    assert conflicts(CUDA0, CUDA1)
    assert conflicts(META, CPU)
    assert not conflicts(CUDA, CUDA0)          # "cuda" is the current device, maybe 0
    assert not conflicts(SEL, symbolic("device"))
    assert not conflicts(symbolic("a"), symbolic("b"))
    assert not conflicts(CPU, UNKNOWN) and not conflicts(UNKNOWN, SEL)
    assert not conflicts(CPU, CPU)


def test_descriptions_name_the_device():
    assert CUDA1.describe() == "cuda:1"
    assert SEL.describe() == "the selected accelerator"
    assert symbolic("self").describe() == "the module's device"
    assert symbolic("args.device").describe() == "`args.device`"


def test_a_value_known_on_one_path_only_is_unknown_and_not_to_be_guessed():
    from devlint.analysis.lattice import LOADER, SOURCE_MIXED, UNKNOWN_VALUE, Value, join_values
    loader = Value(kind=LOADER, device=CPU)
    for joined in (join_values(loader, UNKNOWN_VALUE), join_values(UNKNOWN_VALUE, loader)):
        assert joined.kind == UNKNOWN_VALUE.kind and not joined.device.known
        assert joined.source == SOURCE_MIXED
    # two known kinds that differ say nothing either, but carry no such mark
    from devlint.analysis.lattice import HOST, TENSOR, tensor_side
    number_or_tensor = join_values(Value(kind=HOST), Value(kind=TENSOR, device=CPU))
    assert number_or_tensor.kind == UNKNOWN_VALUE.kind and not number_or_tensor.device.known
    assert not number_or_tensor.source
    # ... except that it may be that tensor: a test that proves it one finds it again
    assert tensor_side(number_or_tensor) == Value(kind=TENSOR, device=CPU)
    assert tensor_side(join_values(number_or_tensor, Value(kind=HOST))) == Value(kind=TENSOR, device=CPU)
    assert tensor_side(join_values(Value(kind=HOST), Value(kind=LOADER))) is None
    # a tensor on one path and a batch on the other is just unknown (and the join ends)
    from devlint.analysis.lattice import BATCH
    assert tensor_side(join_values(Value(kind=BATCH, device=CPU), Value(kind=TENSOR, device=CPU))) is None
    assert tensor_side(join_values(number_or_tensor, Value(kind=BATCH, device=CPU))) is None


def test_what_holds_on_one_path_of_a_join_still_holds_there():
    import libcst as cst
    from devlint.analysis.lattice import MODULE, Value, join_values

    stray = cst.parse_statement("model.fc = nn.Linear(4, 2)\n").body[0]
    weights = Value(kind=MODULE, device=CPU, stateful=True)
    # a head factory giving `nn.Identity()` on one path and `nn.Linear(...)` on the other: weights there
    assert join_values(Value(kind=MODULE, device=CPU, stateful=False), weights).stateful is True
    assert join_values(Value(kind=MODULE, device=CPU), weights).stateful is None  # unknown stays unknown
    # a part left behind on one path (`if n != model.num_classes: model.reset_classifier(n)`)
    moved = Value(kind=MODULE, device=SEL, stateful=True)
    assert join_values(moved, Value(kind=MODULE, device=SEL, stateful=True, stray=stray)).stray is stray


def test_a_model_wrapped_on_one_path_stays_apart_from_the_bare_one():
    from devlint.analysis.lattice import MODULE, OWN_FORWARD_MOVES, Value, join_values
    bare = Value(kind=MODULE, device=CPU, cls="Net")
    wrapped = Value(kind=MODULE, device=CPU, cls="Net", scatters="DataParallel")
    joined = join_values(bare, wrapped)
    assert {side.scatters for side in joined.alternatives} == {"", "DataParallel"}
    # two parts that differ only in whether their own forward moves its input are one part
    moving = Value(kind=MODULE, device=CPU, cls="RMSNorm", scatters=OWN_FORWARD_MOVES)
    assert join_values(bare, moving).alternatives == ()


def test_the_gpu_a_process_starts_on_is_no_gpu_written_out():
    from devlint.analysis.lattice import PER_RANK, PROCESS_START_GPU
    chosen_at_run_time = Device("cuda", None, PER_RANK)
    assert not conflicts(PROCESS_START_GPU.device, chosen_at_run_time)
    assert conflicts(CUDA0, chosen_at_run_time)
