"""The package's types: mypy --strict, as a user's checker reads them."""

import os
import subprocess
import sys

PKG = os.path.join(os.path.dirname(__file__), "..", "spool")


def test_mypy_strict_finds_nothing():
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict",
                        "--cache-dir=/dev/null", PKG],
                       capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == \
        (0, "Success: no issues found in 3 source files\n", "")
