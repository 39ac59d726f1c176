"""`python -m solar ...` is the `solar` command."""

import sys

from .cli import run

run(["solar", *sys.argv[1:]])
