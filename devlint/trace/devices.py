"""The virtual device tag and PyTorch's own error texts.

A simulated cuda tensor is a real CPU tensor carrying `_devlint_device`
(an attribute, not a subclass: `Module._apply` swaps parameter data and a
subclass would lose it). An untagged tensor is on the CPU.
"""
from __future__ import annotations

import torch

TAG = "_devlint_device"
ORIGIN = "_devlint_origin"  # (file, line) of the user factory call that made a CPU tensor

CPU = torch.device("cpu")


def tag_of(t):
    return getattr(t, TAG, None)


def set_tag(t, dev) -> None:
    if dev is None:
        if getattr(t, TAG, None) is not None:
            delattr(t, TAG)
    else:
        setattr(t, TAG, dev)


def tag_outputs(result, dev) -> None:
    """Tags a tensor result, or the tensors of a tuple/list result."""
    if isinstance(result, torch.Tensor):
        setattr(result, TAG, dev)
    elif isinstance(result, (tuple, list)):
        for r in result:
            if isinstance(r, torch.Tensor):
                setattr(r, TAG, dev)


def mismatch_message(first, second) -> str:
    # Same text as ATen's TensorIterator check.
    return ("Expected all tensors to be on the same device, but found at least "
            f"two devices, {first} and {second}!")


def numpy_message(dev) -> str:
    # Same text as torch/csrc/utils/tensor_numpy.cpp.
    return (f"can't convert {dev} device type tensor to numpy. Use Tensor.cpu() "
            "to copy the tensor to host memory first.")


INVALID_ORDINAL = "CUDA error: invalid device ordinal"


class DeviceTable:
    """Canonical torch.device objects for cuda:0..n-1 (so tags compare with
    `is`), the current device, and parsing of user device arguments."""

    def __init__(self, n_gpus: int):
        self.n = n_gpus
        self.cuda = [torch.device("cuda", i) for i in range(n_gpus)]
        self.current = 0
        self._parsed: dict = {}

    def parse(self, dev):
        """Returns CPU, a canonical cuda device, or None for any other device
        (meta, mps, ...), which the simulation leaves alone. Raises like a
        real GPU for an ordinal that does not exist."""
        if isinstance(dev, int):
            kind, index = "cuda", dev
        else:
            try:
                cached = self._parsed.get(dev)
            except TypeError:
                cached = None
            if cached is not None:
                return self._resolve(*cached)
            d = torch.device(dev)
            kind, index = d.type, d.index
            try:
                self._parsed[dev] = (kind, index)
            except TypeError:
                pass
        return self._resolve(kind, index)

    def _resolve(self, kind, index):
        if kind == "cpu":
            return CPU
        if kind != "cuda":
            return None
        if index is None:
            index = self.current
        if not 0 <= index < self.n:
            raise RuntimeError(INVALID_ORDINAL)
        return self.cuda[index]

    def index_of(self, dev) -> int:
        return self.current if dev is None else self.parse(dev).index
