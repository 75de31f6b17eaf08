"""The runtime tracer's core: simulated cuda on a CPU-only torch build."""
from __future__ import annotations

import json
import os
import textwrap
import threading

import pytest

torch = pytest.importorskip("torch")

from devlint.trace import run_module, run_script  # noqa: E402

pytestmark = pytest.mark.skipif(torch.cuda.is_available(),
                                reason="these check the simulation; a real GPU is present")

MISMATCH = ("Expected all tensors to be on the same device, but found at least "
            "two devices, cuda:0 and cpu!")


def write(tmp_path, source: str, name: str = "prog.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def line_of(path, marker: str) -> int:
    for n, text in enumerate(path.read_text().splitlines(), 1):
        if marker in text:
            return n
    raise AssertionError(marker)


def assert_restored():
    assert torch.cuda.is_available() is False
    assert torch.cuda.device_count() == 0
    assert torch._C._len_torch_function_stack() == 0
    assert torch.randn(2).device.type == "cpu"


FORGOT_BATCH = """
    import torch, torch.nn as nn
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 2).to(device)
    x = torch.randn(8, 4)
    out = model(x)  # MISMATCH-1
    y = torch.zeros(8, 2)
    loss = ((out - y) ** 2).mean()  # MISMATCH-2
    print("finished", loss.item())
"""


def test_batch_left_on_cpu_raises_at_the_users_line(tmp_path):
    prog = write(tmp_path, FORGOT_BATCH)
    report = run_script(str(prog))
    assert report.mode == "simulated" and report.gpus == 2
    assert report.exit_status == 1
    exc = report.exception
    assert (exc.type, exc.message) == ("RuntimeError", MISMATCH)
    assert (exc.file, exc.line) == (str(prog), line_of(prog, "MISMATCH-1"))
    [event] = report.events_of("device-mismatch")
    assert (event.line, event.count, event.message) == (line_of(prog, "MISMATCH-1"), 1, MISMATCH)
    assert_restored()


def test_keep_going_records_every_mismatch_and_finishes(tmp_path, capsys):
    prog = write(tmp_path, FORGOT_BATCH)
    report = run_script(str(prog), keep_going=True)
    assert report.exit_status == 0 and report.exception is None
    lines = sorted(e.line for e in report.events_of("device-mismatch"))
    assert lines == [line_of(prog, "MISMATCH-1"), line_of(prog, "MISMATCH-2")]
    assert "finished" in capsys.readouterr().out
    assert_restored()


CORRECT_TRAINING = """
    import sys, torch, torch.nn as nn
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    first = model[0].weight
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)  # built before the move
    model.to(device)
    assert model[0].weight is first
    x = torch.randn(64, 8, device=device)
    y = x.sum(dim=1, keepdim=True)
    losses = []
    for step in range(20):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    values = torch.stack(losses).cpu().tolist()
    print("DEVICE", x.device, model[0].weight.device, model[0].weight.grad.device)
    print("LOSS", values[0], values[-1])
    print(repr(x[:1, :2]))
    assert values[-1] < values[0] / 2
    assert str(x.device) == "cuda:0" and x.is_cuda and x.get_device() == 0
    assert opt.state[model[0].weight]["exp_avg"].device.type == "cuda"
    sys.exit(0)
"""


def test_correct_training_runs_clean_on_cuda0(tmp_path, capsys):
    prog = write(tmp_path, CORRECT_TRAINING)
    report = run_script(str(prog))
    out = capsys.readouterr().out
    assert report.exception is None, report.exception
    assert report.exit_status == 0
    assert "DEVICE cuda:0 cuda:0 cuda:0" in out
    assert "device='cuda:0'" in out
    # The only event is the one deliberate .cpu() after the loop.
    assert [(e.kind, e.count) for e in report.events] == [("host-sync", 1)]
    assert_restored()


def test_item_in_a_loop_is_a_counted_host_sync(tmp_path):
    prog = write(tmp_path, """
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        w = torch.ones(3, device=device)
        total = 0.0
        for _ in range(7):
            total += (w * 2).sum().item()  # SYNC
        if w.sum() > 0:  # BOOL
            pass
        assert total == 42.0
    """)
    report = run_script(str(prog))
    assert report.exception is None
    syncs = {e.line: e.count for e in report.events_of("host-sync")}
    assert syncs == {line_of(prog, "SYNC"): 7, line_of(prog, "BOOL"): 1}


def test_numpy_of_a_cuda_tensor_raises_the_real_type_error(tmp_path):
    prog = write(tmp_path, """
        import torch
        t = torch.ones(2).cuda()
        arr = t.numpy()  # NUMPY
    """)
    report = run_script(str(prog))
    assert report.exception.type == "TypeError"
    assert report.exception.message == (
        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to "
        "copy the tensor to host memory first.")
    assert report.exception.line == line_of(prog, "NUMPY")
    kinds = {e.kind: e.line for e in report.events}
    assert kinds["numpy-on-accelerator"] == line_of(prog, "NUMPY")
    # .cuda() with no is_available() check anywhere before it:
    assert kinds["accelerator-without-check"] == line_of(prog, ".cuda()")


def test_created_then_moved_and_factory_in_loop(tmp_path):
    prog = write(tmp_path, """
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        w = torch.ones(3, device=device)
        for _ in range(12):
            noise = torch.randn(3)  # FACTORY
            w = w + noise.to(device)
    """)
    report = run_script(str(prog))
    assert report.exception is None
    factory = line_of(prog, "FACTORY")
    assert [(e.kind, e.line, e.count) for e in report.events] == [
        ("cpu-factory-in-loop", factory, 12), ("created-then-moved", factory, 12)]


def test_data_parallel_with_parameters_on_cpu(tmp_path):
    prog = write(tmp_path, """
        import torch, torch.nn as nn
        model = nn.DataParallel(nn.Linear(4, 2))
        out = model(torch.randn(8, 4))  # DP
    """)
    report = run_script(str(prog))
    assert report.exception.type == "RuntimeError"
    assert report.exception.message == (
        "module must have its parameters and buffers on device cuda:0 "
        "(device_ids[0]) but found one of them on device: cpu")
    assert report.exception.line == line_of(prog, "DP")


def test_data_parallel_after_the_move_runs_one_replica(tmp_path):
    prog = write(tmp_path, """
        import torch, torch.nn as nn
        model = nn.DataParallel(nn.Linear(4, 2).cuda())
        out = model(torch.randn(8, 4))  # scatter moves the CPU input
        assert out.device == torch.device("cuda:0") and out.shape == (8, 2)
        assert model.device_ids == [0, 1]
    """)
    report = run_script(str(prog))
    assert report.exception is None and report.exit_status == 0


def test_everything_is_restored_after_an_exception(tmp_path):
    prog = write(tmp_path, """
        import threading, torch
        torch.set_default_device("cuda")
        assert torch.zeros(1).is_cuda
        raise ValueError("boom")
    """)
    before = threading.Thread._bootstrap_inner, torch.load, torch.nn.Parameter.__new__
    report = run_script(str(prog), ["a", "b"])
    assert (report.exception.type, report.exception.message) == ("ValueError", "boom")
    assert report.exit_status == 1
    assert (threading.Thread._bootstrap_inner, torch.load, torch.nn.Parameter.__new__) == before
    assert torch.get_default_device().type == "cpu"
    assert torch.nn.DataParallel.forward.__module__ == "torch.nn.parallel.data_parallel"
    assert_restored()


def test_argv_path_and_exit_status(tmp_path):
    write(tmp_path, "VALUE = 7\n", name="helper_mod_xyz.py")
    prog = write(tmp_path, """
        import sys, helper_mod_xyz
        assert sys.argv[1:] == ["--epochs", "3"], sys.argv
        assert __name__ == "__main__"
        sys.exit(helper_mod_xyz.VALUE)
    """)
    import sys
    argv, path = list(sys.argv), list(sys.path)
    report = run_script(str(prog), ["--epochs", "3"])
    assert report.exit_status == 7 and report.exception is None
    assert sys.argv == argv and sys.path == path
    assert "helper_mod_xyz" not in sys.modules


def test_run_module(tmp_path, monkeypatch):
    pkg = tmp_path / "tracedpkg_xyz"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(
        "import torch\nx = torch.ones(2, device='cuda:1')\nprint(x.device)\n")
    monkeypatch.chdir(tmp_path)
    report = run_module("tracedpkg_xyz", [])
    assert report.exit_status == 0 and report.exception is None
    [event] = report.events
    assert event.kind == "accelerator-without-check" and event.line == 2


def test_save_and_load_with_map_location(tmp_path):
    prog = write(tmp_path, """
        import torch, torch.nn as nn
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = nn.Linear(3, 3).to(device)
        torch.save(model.state_dict(), "ckpt.pt")
        on_gpu = torch.load("ckpt.pt", map_location=device)
        on_cpu = torch.load("ckpt.pt", map_location="cpu")
        assert on_gpu["weight"].device.type == "cuda", on_gpu["weight"].device
        assert on_cpu["weight"].device.type == "cpu"
        fresh = nn.Linear(3, 3).to(device)
        fresh.load_state_dict(torch.load("ckpt.pt"))
        assert torch.equal(fresh.weight, model.weight)
        assert fresh.weight.device.type == "cuda"
    """)
    import os
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        report = run_script(str(prog))
    finally:
        os.chdir(cwd)
    assert report.exception is None, report.exception


def test_dataloader_with_pinned_memory_and_workers(tmp_path):
    prog = write(tmp_path, """
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        device = "cuda" if torch.cuda.is_available() else "cpu"
        ds = TensorDataset(torch.arange(40.).view(20, 2), torch.arange(20))
        loader = DataLoader(ds, batch_size=5, num_workers=2, pin_memory=True)
        seen = 0
        for x, y in loader:
            assert x.device.type == "cpu"
            x, y = x.to(device, non_blocking=True), y.to(device)
            assert x.is_cuda and y.is_cuda
            seen += len(y)
        assert seen == 20
    """)
    report = run_script(str(prog))
    assert report.exception is None, report.exception
    assert report.exit_status == 0


def test_user_threads_inherit_the_simulation(tmp_path):
    prog = write(tmp_path, """
        import threading, torch
        seen = []
        class Worker(threading.Thread):
            def run(self):
                seen.append(torch.ones(1, device="cuda").device.type)
        w = Worker(); w.start(); w.join()
        assert seen == ["cuda"], seen
    """)
    report = run_script(str(prog))
    assert report.exception is None, report.exception


def test_indexing_and_scalar_exceptions(tmp_path):
    prog = write(tmp_path, """
        import torch
        x = torch.arange(6., device="cuda").view(2, 3)
        assert x[torch.tensor([1, 0])].is_cuda          # CPU index into cuda
        assert (x * torch.tensor(2.0)).is_cuda          # 0-dim CPU scalar
        x[torch.tensor([0])] = 1.0
        y = x.to("cuda:1")
        z = x + y  # TWO-GPUS
    """)
    report = run_script(str(prog))
    assert report.exception.message == (
        "Expected all tensors to be on the same device, but found at least "
        "two devices, cuda:0 and cuda:1!")
    assert report.exception.line == line_of(prog, "TWO-GPUS")


def test_report_json_shape(tmp_path):
    prog = write(tmp_path, FORGOT_BATCH)
    data = json.loads(run_script(str(prog), simulate_gpus=1).to_json())
    assert set(data) == {"mode", "gpus", "exit_status", "exception", "events", "reached"}
    assert data["gpus"] == 1 and data["mode"] == "simulated"
    assert set(data["exception"]) == {"type", "message", "file", "line", "callers"}
    assert set(data["events"][0]) == {"kind", "file", "line", "count", "message", "callers"}


def test_real_gpu_mode_counts_cuda_sync_warnings_at_the_user_line():
    """On a GPU, set_sync_debug_mode("warn") warns on each synchronizing call; the tracer
    counts them at the user's line. The warning is raised by hand here (no GPU in CI)."""
    import warnings

    from devlint.trace.events import Recorder
    from devlint.trace.realgpu import RealTracing, _SYNC_WARNING

    recorder = Recorder()
    tracing = RealTracing(recorder)
    with tracing:
        if not torch.cuda.is_available():  # a CPU build: install the hook as a GPU run would
            tracing._count_sync_warnings(tracing._patches)
        for _ in range(3):
            warnings.warn(f"{_SYNC_WARNING} (item)", UserWarning, stacklevel=1)  # the user's line
    syncs = [e for e in recorder.events() if e.kind == "host-sync"]
    assert [(os.path.basename(e.file), e.count) for e in syncs] == [("test_trace_core.py", 3)]
    assert warnings.showwarning.__module__ == "warnings"
