"""`python -m solar ...` is the `solar` command."""

import sys

from .cli import main

sys.exit(main(["solar", *sys.argv[1:]]))
