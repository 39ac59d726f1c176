"""`solar suite DIR`: every KernelBench-format or loop program of a folder analyzed in one run, each
in a worker process so that one crash, hang or exception does not stop the rest.

The parent process never imports torch. It finds the programs (recursive `*.py`, sorted),
starts `--jobs` worker processes (each imports torch and the frontend once, then analyzes
many programs through `solar.programs.analyze_file`, so a program gets the
report `solar analyze model.py` gives it), hands them one program at a time, kills and
replaces a worker whose program exceeds `--timeout` or which dies, and writes the results:
JSON (`solar.suite.v1`), CSV and a summary table. docs/suite.md describes it.

Workers are plain subprocesses speaking JSON lines on a private pipe (not multiprocessing):
the programs print to their stdout freely, and nothing of the user's `__main__` is
re-imported in the worker.

Modules: discovery (the programs of a folder), worker (a worker process: one program at a
time), pool (the parent's workers: dispatch, timeouts, crashes), progress (the progress line,
shared with solar sweep), outputs (summary, table, JSON, CSV), cli (the command).
"""
