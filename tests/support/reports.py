# SPDX-License-Identifier: BSD-3-Clause
"""What the Python test scripts that read mini5d's JSON reports share: one "FAIL:"
line and exit 1, and a report loaded or failed with its path."""
import json
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
