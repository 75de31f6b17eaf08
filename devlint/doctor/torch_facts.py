"""What torch said about itself (`torch_probe.py`'s snapshot), read leniently."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional


@dataclass
class TorchFacts:
    """`torch_probe.py`'s answers, read leniently: a recording may be old or hand-made."""

    snapshot: dict

    @classmethod
    def of(cls, snapshot: object) -> "TorchFacts":
        return cls(snapshot if isinstance(snapshot, dict) else {})

    def text(self, key: str) -> Optional[str]:
        value = self.snapshot.get(key)
        return str(value) if value not in (None, "") else None

    def flag(self, key: str) -> bool:
        return self.snapshot.get(key) is True

    def strings(self, key: str) -> List[str]:
        value = self.snapshot.get(key)
        return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []

    def records(self, key: str) -> List[dict]:
        value = self.snapshot.get(key)
        return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []

    @property
    def installed(self) -> bool:
        return self.flag("installed")

    @property
    def version(self) -> Optional[str]:
        return self.text("version")

    @property
    def cuda(self) -> Optional[str]:
        return self.text("cuda")

    @property
    def hip(self) -> Optional[str]:
        return self.text("hip")

    @property
    def cpu_only(self) -> bool:
        return self.installed and not (self.cuda or self.hip or self.flag("mps_built"))

    @property
    def python(self) -> str:
        return self.text("python") or "python"

    @property
    def devices(self) -> List[dict]:
        return self.records("devices")

    @property
    def libraries(self) -> Dict[str, str]:
        """The CUDA/ROCm runtime files the probe process had mapped, by library."""
        value = self.snapshot.get("libraries")
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}

    @property
    def reasons(self) -> List[str]:
        """Why torch says no device is usable: its init error, then its warnings."""
        reasons = [self.text("init_error")] + self.strings("warnings")
        return [reason for reason in reasons if reason]
