"""nn.DataParallel under simulation.

On a CPU build DataParallel's scatter needs torch._C._scatter, which is
absent. Its forward is replaced by one that keeps DataParallel's own
placement check (same text) and runs one replica on device_ids[0].
"""
from __future__ import annotations

from itertools import chain

import torch


def _to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_to_device(o, device) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, device)) for k, v in obj.items())
    return obj


def data_parallel_forward(self, *inputs, **kwargs):
    if not self.device_ids:
        return self.module(*inputs, **kwargs)
    for t in chain(self.module.parameters(), self.module.buffers()):
        if t.device != self.src_device_obj:
            raise RuntimeError(
                "module must have its parameters and buffers "
                f"on device {self.src_device_obj} (device_ids[0]) but found one of "
                f"them on device: {t.device}")
    inputs = _to_device(inputs, self.src_device_obj)  # what scatter would do
    kwargs = _to_device(kwargs, self.src_device_obj)
    output = self.module(*inputs, **kwargs)
    return _to_device(output, torch.device("cuda", self.output_device))
