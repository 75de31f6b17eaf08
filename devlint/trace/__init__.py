"""Runtime tracer: runs a program on a real or simulated GPU and records
device events. torch is imported only when a run starts."""
#: What to say when torch is missing.
INSTALL_HINT = "devlint trace needs PyTorch; install it with: pip install 'devlint[trace]'"

from .report import Failure, Report  # noqa: E402 - after the constant the modules below may use
from .runner import run_module, run_script

__all__ = ["INSTALL_HINT", "Failure", "Report", "run_module", "run_script"]
