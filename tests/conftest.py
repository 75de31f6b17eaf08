import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_configure(config):
    # tests/test_precommit.py builds a hook environment with pip, from PyPI.
    config.addinivalue_line("markers", "network: needs network access (PyPI) to install packages")
