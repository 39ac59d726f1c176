"""`solar sweep` (docs/sweep.md) on a real local Dask cluster: two worker processes on
127.0.0.1, started once for the module, reached by --address as a remote cluster is.
examples/torch/mlp.py at small sizes on two devices over a 2x2 grid: the rows, their MACs
against the program's formula, both workers used, Parquet = CSV, resume (nothing new; one
row deleted -> one point), a point whose program raises, a point whose worker dies, the
plots; and bad input (exit codes, no output)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("torch")
pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
import pyarrow.csv as pacsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from conftest import ROOT, run_solar  # noqa: E402

MLP = "examples/torch/mlp.py"
ARCHS = ["H100_SXM", "B200"]
FIXED = {"in_features": 8, "out_features": 4}  # small: each point captures in well under 1 s
GRID = {"batch_size": [2, 4], "hidden": [16, 32]}


def mlp_macs(batch_size: int, hidden: int, in_features: int = 8, out_features: int = 4) -> int:
    """examples/torch/mlp.py: fc1 (in_features -> hidden) then fc2 (hidden -> out_features)
    on batch_size rows; GELU, the biases and the layer norm are vector work."""
    return batch_size * in_features * hidden + batch_size * hidden * out_features


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of 2 worker processes (1 thread each) on 127.0.0.1, no dashboard;
    allowed-failures 0, as `solar sweep` starts its own (a point whose worker dies fails
    at once). The workers import the solar under test (spawn passes sys.path on)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        c = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                         dashboard_address=None, silence_logs=logging.ERROR)
    try:
        yield c
    finally:
        c.close()


def _cli_args(out, address):
    args = ["sweep", MLP, "--out", str(out), "--address", address, "--quiet"]
    for a in ARCHS:
        args += ["--arch", a]
    for k, vs in GRID.items():
        args += ["--grid", f"{k}={','.join(map(str, vs))}"]
    for k, v in FIXED.items():
        args += ["--set", f"{k}={v}"]
    return args


def _computed(stdout: str) -> int:
    m = re.search(r"computed (\d+) point", stdout)
    return int(m.group(1)) if m else 0


def _rows(out):
    return pq.read_table(os.path.join(out, "sweep.parquet"))


def test_sweep_on_a_local_cluster_rows_resume_plots(cluster, tmp_path):
    out = tmp_path / "mlp"
    args = _cli_args(out, cluster.scheduler_address)
    r = run_solar(*args)
    assert r.returncode == 0, r.stderr + r.stdout
    assert _computed(r.stdout) == 4, r.stdout

    table = _rows(out)
    rows = table.to_pylist()
    assert len(rows) == 4 * len(ARCHS)
    assert [(x["batch_size"], x["hidden"], x["arch"]) for x in rows] == [
        (b, h, a) for b in GRID["batch_size"] for h in GRID["hidden"] for a in ARCHS]
    for x in rows:
        assert x["status"] == "ok" and x["error"] is None, x
        assert x["program"] == MLP
        assert x["macs"] == mlp_macs(x["batch_size"], x["hidden"]), x
        assert x["flops"] > 2 * x["macs"]  # + GELU, biases, layer norm
        assert x["bytes_unfused"] >= x["bytes_fused"] > 0
        for level in ("unfused", "fused", "cache_aware"):
            assert x[f"{level}_seconds"] > 0
            assert x[f"{level}_bound"] in ("compute", "memory")
        assert x["unfused_seconds"] >= x["fused_seconds"]
        assert x["wall_seconds"] > 0
    # One capture per point: a point's rows share its key, its worker and its time.
    by_key = {}
    for x in rows:
        by_key.setdefault(x["point_key"], []).append(x)
    assert len(by_key) == 4
    for same in by_key.values():
        assert [x["arch"] for x in same] == ARCHS
        assert len({(x["worker"], x["wall_seconds"]) for x in same}) == 1
    # Both workers of the cluster ran points.
    workers = set(cluster.scheduler_info["workers"])
    used = {x["worker"] for x in rows}
    assert used <= workers and len(used) == 2, (used, workers)

    # The CSV holds the same values as the Parquet file.
    csv_table = pacsv.read_csv(str(out / "sweep.csv"), convert_options=pacsv.ConvertOptions(
        column_types=table.schema, strings_can_be_null=True))
    assert csv_table.column_names == table.column_names
    assert csv_table.to_pylist() == rows

    # One SVG per swept key, one fused line per device and value of the other key.
    for key in GRID:
        svg = out / f"sweep-mlp-{key}.svg"
        assert svg.is_file(), sorted(os.listdir(out))
        root = ET.parse(svg).getroot()
        ids = [g.get("id", "") for g in root.iter("{http://www.w3.org/2000/svg}g")]
        (other,) = [k for k in GRID if k != key]
        assert sorted(i for i in ids if i.startswith("sweep-fused-")) == sorted(
            f"sweep-fused-{a}-{other}_{v}" for a in ARCHS for v in GRID[other])

    # Resume: the same sweep again computes nothing and keeps the table.
    r = run_solar(*args)
    assert r.returncode == 0, r.stderr + r.stdout
    assert _computed(r.stdout) == 0 and "skipped 4 point" in r.stdout, r.stdout
    assert _rows(out).to_pylist() == rows

    # One row deleted: exactly that point is computed again, on that device only.
    gone = rows[3]
    pq.write_table(pa.Table.from_pylist([x for x in rows if x is not gone], schema=table.schema),
                   str(out / "sweep.parquet"))
    assert _rows(out).num_rows == len(rows) - 1
    r = run_solar(*args)
    assert r.returncode == 0, r.stderr + r.stdout
    assert _computed(r.stdout) == 1 and "skipped 3 point" in r.stdout, r.stdout
    again = _rows(out).to_pylist()
    assert len(again) == len(rows)
    assert again[:3] + again[4:] == rows[:3] + rows[4:]
    assert again[3]["macs"] == gone["macs"] and again[3]["arch"] == gone["arch"]


def test_a_point_whose_program_raises_is_a_failed_row(cluster, tmp_path):
    """The spec file form (YAML): batch_size -1 makes the program's get_inputs raise."""
    spec = tmp_path / "sweep.yaml"
    out = tmp_path / "out"
    spec.write_text(textwrap.dedent(f"""\
        programs: [{ROOT / MLP}]
        archs: [H100_SXM, B200]
        grid:
          batch_size: [2, -1, 4]
        set: {{in_features: 8, hidden: 16, out_features: 4}}
        cache_aware: false
        out: {out}
        """))
    r = run_solar("sweep", str(spec), "--address", cluster.scheduler_address, "--quiet")
    assert r.returncode == 0, r.stderr + r.stdout
    rows = _rows(out).to_pylist()
    assert [(x["batch_size"], x["status"]) for x in rows] == [
        (2, "ok"), (2, "ok"), (-1, "failed"), (-1, "failed"), (4, "ok"), (4, "ok")]
    for x in rows:
        if x["status"] == "failed":
            assert "mlp.py:" in x["error"] and "the program failed" in x["error"], x
            assert x["macs"] is None and x["fused_seconds"] is None
        else:
            assert x["macs"] == mlp_macs(x["batch_size"], 16)
            assert x["cache_aware_seconds"] is None  # cache_aware: false
    assert "failed points:" in r.stdout and "batch_size=-1" in r.stdout
    # A plot for the swept key, with the failed point left out of each line.
    assert (out / "sweep-mlp-batch_size.svg").is_file()


CRASHES = """
import os
import torch

crash = False
n = 4
if crash:
    os._exit(3)  # the worker process dies, as one killed for its memory does


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
"""


def test_a_point_whose_worker_dies_is_a_failed_row(cluster, tmp_path):
    """Last: it costs the cluster a worker restart."""
    program = tmp_path / "crashes.py"
    program.write_text(CRASHES)
    out = tmp_path / "out"
    r = run_solar("sweep", str(program), "--grid", "crash=False,True", "--out", str(out),
                  "--address", cluster.scheduler_address, "--quiet", "--no-cache-aware",
                  "--no-plots")
    assert r.returncode == 0, r.stderr + r.stdout
    rows = _rows(out).to_pylist()
    assert [(x["crash"], x["status"]) for x in rows] == [(False, "ok"), (True, "failed")]
    assert "worker process running this point died" in rows[1]["error"], rows[1]
    assert not list(out.glob("*.svg"))


def _main(*args):
    from solar.cli import main

    return main(["solar", "sweep", *args])


def test_bad_input_exit_codes_and_no_output(tmp_path, capsys, in_root):
    from solar import _core

    codes = _core.EXIT_CODES
    out = tmp_path / "out"

    assert _main(str(tmp_path / "missing.yaml")) == codes["io"]
    assert "no such spec file" in capsys.readouterr().err

    bad = tmp_path / "bad.yaml"
    bad.write_text("programs: [examples/torch/mlp.py\narchs: {\n")
    assert _main(str(bad)) == codes["parse"]
    assert "malformed YAML" in capsys.readouterr().err

    unknown_field = tmp_path / "field.yaml"
    unknown_field.write_text(f"programs: [{MLP}]\ngrids: {{batch_size: [1]}}\nout: {out}\n")
    assert _main(str(unknown_field)) == codes["usage"]
    assert "unknown field grids" in capsys.readouterr().err

    assert _main(MLP, "--grid", "batch_sise=1,2", "--out", str(out)) == codes["usage"]
    err = capsys.readouterr().err
    assert f"{MLP}: grid key 'batch_sise' is not a module-level constant" in err, err

    assert _main(MLP, "--arch", "H100_SXM,H900", "--out", str(out)) == codes["unknown_device"]
    assert "H900" in capsys.readouterr().err

    assert _main("examples/torch/nope.py", "--out", str(out)) == codes["io"]
    assert _main(MLP) == codes["usage"]  # no --out
    assert "--out" in capsys.readouterr().err
    assert _main(MLP, "--out", str(tmp_path / "no" / "such")) == codes["io"]
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({"programs": [MLP], "out": str(out)}))
    assert _main(str(spec), "--arch", "B200") == codes["usage"]  # analysis options: in the spec
    assert "say it in the spec" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "no").exists()

    # The command is listed: a typo gets the close match.
    from solar.cli_usage import unknown_command

    assert unknown_command(["solar", "swep"]) == codes["usage"]
    assert "`solar sweep`" in capsys.readouterr().err


# ---------------------------------------------------------------- limits and checks first

def test_a_sweep_past_the_point_limit_is_refused_before_anything_runs(tmp_path):
    """10^6 points (about 7 hours, started without a word before): counted from the grid
    before the cluster starts, refused in one line naming the limit and --force."""
    from solar import _core

    many = ",".join(str(i) for i in range(1, 1001))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "solar", "sweep", str(ROOT / MLP), "--grid",
                        f"batch_size={many}", "--grid", f"hidden={many}", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == _core.EXIT_CODES["usage"], r.stderr
    assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert "the sweep has 1,000,000 points (1 program(s) x grid 1000 x 1000)" in r.stderr
    assert "past the limit of 10,000" in r.stderr and "--force" in r.stderr
    assert not out.exists()


def test_force_runs_past_the_point_limit(cluster, tmp_path, capsys, monkeypatch, in_root):
    """With the limit at 3 points, a 2 x 2 grid is refused, and runs with --force."""
    from solar import _core
    from solar.sweep import spec as spec_mod

    monkeypatch.setattr(spec_mod, "LIMIT_POINTS", 3)
    out = tmp_path / "out"
    args = [MLP, "--grid", "batch_size=2,4", "--grid", "hidden=16,32", "--set",
            "in_features=8", "--set", "out_features=4", "--out", str(out), "--address",
            cluster.scheduler_address, "--quiet", "--no-plots", "--no-cache-aware"]
    assert _main(*args) == _core.EXIT_CODES["usage"]
    assert "the sweep has 4 points" in capsys.readouterr().err
    assert not out.exists()
    assert _main(*args, "--force") == 0
    assert _computed(capsys.readouterr().out) == 4
    assert len(_rows(out).to_pylist()) == 4


WAITS_FOR_THE_SPEC = """
import os
import torch

OUT = ""
n = 4
if not os.path.isfile(os.path.join(OUT, "spec.json")):
    raise RuntimeError("the point ran before the sweep wrote its spec")


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
"""


def test_the_spec_is_written_before_the_first_point_and_the_sweep_says_how_long(
        cluster, tmp_path):
    """The point's program fails unless OUT/spec.json exists when it runs; the first line
    on stderr gives the points and about how long they take."""
    program = tmp_path / "waits.py"
    program.write_text(WAITS_FOR_THE_SPEC)
    out = tmp_path / "out"
    r = run_solar("sweep", str(program), "--set", f"OUT={str(out)!r}", "--grid", "n=4,8",
                  "--out", str(out), "--address", cluster.scheduler_address, "--no-plots",
                  "--no-cache-aware")
    assert r.returncode == 0, r.stderr + r.stdout
    rows = _rows(out).to_pylist()
    assert [x["status"] for x in rows] == ["ok", "ok"], rows
    from solar.sweep.spec import PROGRAM_POINT_SECONDS

    first = r.stderr.splitlines()[0]
    assert f"2 point(s) to compute, about {2 * PROGRAM_POINT_SECONDS:.0f} s of work" in first, first
    assert json.loads((out / "spec.json").read_text())["grid"] == {"n": [4, 8]}


def test_model_settings_and_grid_values_are_checked_before_anything_runs(tmp_path, capsys,
                                                                         in_root):
    """A model's batch -8 or dtype q4 was a failed row per point after the cluster had
    started; a grid value that is no literal was a string the program choked on."""
    from solar import _core

    usage = _core.EXIT_CODES["usage"]
    out = tmp_path / "out"
    for args, words in (
            (["hf:gpt2", "--grid", "batch=1,-8"], "hf:gpt2: grid batch=-8: --batch must be a "
                                                  "positive integer, not -8"),
            (["hf:gpt2", "--grid", "seq_len=0"], "grid seq_len=0: --seq must be a positive"),
            (["hf:gpt2", "--dtype", "q4"], "hf:gpt2: model: --dtype 'q4'"),
            (["hf:not-a-model"], "is not in Solar's model registry"),
            ([MLP, "--grid", "batch_size=[1,2"], "--grid batch_size: '[1,2' is neither a "
                                                 "Python literal"),
            ([MLP, "--jobs", "100000"], "at most")):
        assert _main(*args, "--out", str(out)) == usage, args
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
    assert not out.exists()


def test_grid_values_split_at_commas_outside_brackets():
    from solar.sweep.spec import parse_grid_values

    assert parse_grid_values("shape", "(1,2),(3,4)") == [(1, 2), (3, 4)]
    assert parse_grid_values("x", "1, 2.5, 'a,b', [3, 4]") == [1, 2.5, "a,b", [3, 4]]
    assert parse_grid_values("dtype", "bf16,f32,H100_SXM") == ["bf16", "f32", "H100_SXM"]
    for bad in ("[1,2", "2x", "1e", "range(4)", "2**70"):
        with pytest.raises(Exception, match="neither a Python literal"):
            parse_grid_values("x", bad)


# ------------------------------------------------------------------ plots, without a cluster


def _plot(tmp_path, grid, rows_of):
    """write_plots on planted rows: rows_of(arch, settings dict) -> row."""
    import itertools
    import types

    from solar.sweep import plot

    P = types.SimpleNamespace
    points, rows = [], {}
    for values in itertools.product(*grid.values()):
        settings = tuple(zip(grid, values))
        key = "-".join(map(str, values))
        points.append(P(program=P(ref="hf:tiny"), settings=settings, key=key))
        for a in ARCHS:
            rows[(key, a)] = rows_of(a, dict(settings))
    paths = plot.write_plots(str(tmp_path), ["hf:tiny"], grid, ARCHS, points, rows)
    return {os.path.basename(p): ET.parse(p).getroot() for p in paths}


def _texts(root):
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_sweep_plots_have_a_line_per_device_and_context_values_and_tokens(tmp_path):
    pytest.importorskip("matplotlib")
    grid = {"batch": [1, 8, 64], "context": [1024, 8192]}

    def row(arch, s):
        seconds = 1e-3 * (1 + s["batch"] * s["context"] / 8192) / (1 + ARCHS.index(arch))
        return {"status": "ok", "fused_seconds": seconds, "tokens_per_second": s["batch"] / seconds,
                "fits": not (arch == "H100_SXM" and s["batch"] == 64 and s["context"] == 8192)}

    svgs = _plot(tmp_path, grid, row)
    root = svgs["sweep-hf_tiny-batch.svg"]
    ids = [g.get("id", "") for g in root.iter("{http://www.w3.org/2000/svg}g")]
    # one line per device and context, not the batch plot held at one context
    assert sorted(i for i in ids if i.startswith("sweep-fused-")) == sorted(
        f"sweep-fused-{a}-context_{c}" for a in ARCHS for c in grid["context"])
    assert sorted(i for i in ids if i.startswith("sweep-tokens-")) == sorted(
        f"sweep-tokens-{a}-context_{c}" for a in ARCHS for c in grid["context"])
    texts = _texts(root)
    # values at the points: the fastest point, 1 + 1*1024/8192 ms on the second device / 2
    assert "563 us" in texts
    assert any(t.endswith("tokens/s") for t in texts)
    # the log axis labels a tick at every decade it spans (0.35 ms .. 100 ms: 1, 10, 100 ms)
    assert {"1 ms", "10 ms", "100 ms"} <= set(texts)
    assert any("does not fit" in t for t in texts)


def test_a_narrow_log_axis_still_labels_two_ticks():
    from solar.sweep import plot

    assert plot.log_ticks(1.0, 9.0) == [1.0, 2.0, 5.0]  # one decade: 1-2-5 steps
    assert plot.log_ticks(2e-4, 3e-2) == [1e-3, 1e-2]
    assert len(plot.log_ticks(3.1, 3.9)) >= 2


def test_the_table_has_tokens_per_second_for_model_programs():
    from solar.sweep import table

    def report(model):
        doc = {"schema": "solar.report.v1", "totals": {}, "coverage": {"unanalyzed": 0},
               "devices": {"H100_SXM": {"fused": {"seconds": 2e-3, "bottleneck": "dram"}}}}
        if model:
            doc["model"] = {"tokens_per_step": 64}
        return type("R", (), {"to_json": lambda self, indent, ops=True: json.dumps(doc)})()

    task = {"program": "hf:tiny", "settings": (("batch", 64),), "archs": ["H100_SXM"],
            "key": "k"}
    (row,) = table.rows_from_report(report(True), task, 1.0, "w")
    assert row["tokens_per_step"] == 64
    assert row["tokens_per_second"] == pytest.approx(64 / 2e-3)  # tokens / fused seconds
    (plain,) = table.rows_from_report(report(False), task, 1.0, "w")
    assert plain["tokens_per_step"] is None and plain["tokens_per_second"] is None
