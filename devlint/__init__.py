"""devlint: find device-placement bugs in PyTorch code before they cost a GPU hour."""

__version__ = "0.1.0"
