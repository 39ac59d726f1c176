"""`solar sweep`: programs x devices x `--set` grids, one capture per (program, grid point)
analyzed on every device at once, run on a Dask.distributed cluster (a local one by
default), written as one Parquet + CSV row per (program, point, device), resumable, with a
plot per swept axis. docs/sweep.md describes it.

Modules: spec (the spec file or command line, validated; the grid expanded into points),
run (the points on Dask workers; resume), table (rows, Parquet and CSV), plot (SVGs),
cli (the command). solar.sweep imports torch only in the workers (run_point, warm_worker).
"""
