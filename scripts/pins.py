"""The tested versions of every Python package the setup installs (scripts/constraints.txt,
scripts/accelforge-constraints.txt): check an environment against them, or write them anew.

    python scripts/pins.py check FILE     # exit 0 when every pinned package is installed at
                                          # its pinned version; else list what differs, exit 1
    python scripts/pins.py freeze FILE    # write this environment's versions (pip freeze)

Run with the environment's own interpreter (.venv/bin/python). How to refresh the pins and
how to run the tests against the latest releases: README.md, "Pinned versions".
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from typing import Dict

HEADER = """\
# The tested versions of every Python package (direct or not) in this environment, written
# by `python scripts/pins.py freeze` from an environment whose tests passed. scripts/setup
# installs with `pip install -c` this file and checks installed versions against it; refresh
# it as README.md ("Pinned versions") says. The package's own requirements stay loose
# (pyproject.toml).
"""


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", requirement).lower()


def pins(path: str) -> Dict[str, str]:
    """{normalized name: version} of the `name==version` lines of a constraints file."""
    found = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, _, version = line.partition("==")
                found[_name(name)] = version.strip()
    return found


def check(path: str) -> int:
    wrong = []
    for name, version in sorted(pins(path).items()):
        try:
            have = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have != version:
            wrong.append(f"{name} {have or 'missing'} (pinned {version})")
    if wrong:
        print("not at the pinned versions: " + ", ".join(wrong))
        return 1
    return 0


def freeze(path: str) -> int:
    lines = subprocess.run([sys.executable, "-m", "pip", "freeze", "--exclude", "solar",
                            "--exclude-editable"], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    pinned = sorted((l for l in lines if "==" in l), key=lambda l: _name(l.split("==")[0]))
    with open(path, "w", encoding="utf-8") as f:
        f.write(HEADER + "\n".join(pinned) + "\n")
    print(f"{path}: {len(pinned)} packages")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "freeze"):
        sys.exit(__doc__)
    sys.exit({"check": check, "freeze": freeze}[sys.argv[1]](sys.argv[2]))
