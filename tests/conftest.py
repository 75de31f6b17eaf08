import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_configure(config):
    # tests/test_precommit.py builds a hook environment with pip, from PyPI; tests/test_outputs.py
    # fetches the SARIF schema from the npm registry.
    config.addinivalue_line("markers", "network: needs network access (PyPI, the npm registry)")
