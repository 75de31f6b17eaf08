"""Runtime tracer: runs a program on a real or simulated GPU and records
device events. torch is imported only when a run starts."""
from .report import Failure, Report
from .runner import run_module, run_script

__all__ = ["Failure", "Report", "run_module", "run_script"]
