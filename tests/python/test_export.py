"""`solar export`: real programs (PyTorch, JAX, the loop language) exported for AccelForge and
Timeloop (docs/export.md).

- AccelForge: the exported workload is loaded by AccelForge itself, in its own Python >= 3.12
  environment (scripts/accelforge-env; skipped, saying why, only when this machine has no
  Python >= 3.12), and the operation count it computes for each Einsum must be Solar's live
  points, for a contraction its MACs; their sum over contractions Solar's total MACs.
- Timeloop: every classic problem is checked against Timeloop's documented problem schema
  (below), the LoopTree workload against its parser's, and the problems re-read by Solar
  give each einsum's MACs and bytes read back.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import solar
from solar import _core, cli
from solar import programs as prog

ROOT = Path(__file__).resolve().parents[2]

# A strided, zero-padded convolution as PyTorch writes it (KernelBench format).
CONV_PROGRAM = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    N, C, K, H, W = 2, 8, 16, 16, 16


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(C, K, 3, stride=2, padding=1, bias=False)

        def forward(self, x):
            return self.conv(x)


    def get_inputs():
        return [torch.randn(N, C, H, W)]


    def get_init_inputs():
        return []
    """)

# (program, --set overrides, expected MACs as a formula, or None to take Solar's report)
PROGRAMS = [
    # The loop language's GEMM: M*N*K with M, N, K = 512, 1024, 256.
    ("examples/loops/gemm.py", {}, 512 * 1024 * 256),
    # conv 3x3, stride 2, padding 1: N*K*P*Q*C*R*S with P = Q = 8; the halo's taps included.
    ("conv.py", {}, 2 * 16 * 8 * 8 * 8 * 3 * 3),
    # Linear 1024->4096, GELU, Linear 4096->1024, LayerNorm at batch 8: two matmuls.
    ("examples/torch/mlp.py", {"batch_size": "8"}, 8 * 1024 * 4096 + 8 * 4096 * 1024),
    # Causal attention in jnp (masked scores, softmax, values): Solar's own figure.
    ("examples/jax/attention_causal.py", {}, None),
    # A grouped, strided, dilated, padded conv whose guards become masks (non-box spaces).
    ("examples/loops/conv2d.py", {"N": "1", "C": "8", "K": "8", "G": "2", "H": "9", "W": "10"},
     None),
]
IDS = ["loop-gemm", "torch-conv-stride-pad", "torch-mlp", "jax-causal-attention", "loop-conv2d"]


def _program_path(name: str, tmp_path_factory) -> str:
    if name == "conv.py":
        path = tmp_path_factory.mktemp("conv") / "conv.py"
        path.write_text(CONV_PROGRAM)
        return str(path)
    return str(ROOT / name)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """{program id: (graph, Solar's total MACs)}: each program captured and lowered once."""
    out = {}
    options = prog.ProgramOptions(crosscheck=False, cache_aware=False)
    for (name, overrides, _), pid in zip(PROGRAMS, IDS):
        opts = prog.ProgramOptions(**{**options.__dict__, "overrides": overrides})
        result = prog.analyze_file(_program_path(name, tmp_path_factory), opts)
        out[pid] = (result.graph, int(result.report.totals.macs))
    return out


@pytest.fixture(scope="module")
def accelforge_python():
    """The side environment's python with AccelForge (created once, cached in build/)."""
    r = subprocess.run(["bash", str(ROOT / "scripts" / "accelforge-env")], capture_output=True,
                       text=True, timeout=1800)
    if r.returncode == 3:
        pytest.skip(f"AccelForge needs Python >= 3.12: {r.stderr.strip()}")
    assert r.returncode == 0, f"scripts/accelforge-env failed:\n{r.stderr}"
    return r.stdout.strip().splitlines()[-1]


# Run inside the AccelForge environment: every folder's workload loaded with AccelForge,
# n_computes per Einsum and the size of every tensor.
_ACCELFORGE_CHECK = textwrap.dedent("""\
    import json, sys
    import accelforge as af
    out = {}
    for folder in sys.argv[1:]:
        spec = af.Spec.from_yaml(folder + "/workload.yaml")
        w = spec.workload
        spec._spec_eval_expressions()  # renames, bits per value: the whole spec evaluates
        out[folder] = {
            "computes": {e: int(w.n_computes(e)) for e in w.einsum_names},
            "total": int(w.n_computes()),
            "sizes": {t: int(w.get_tensor_size(t)) for t in w.tensor_names},
        }
    print(json.dumps(out))
    """)


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "solar-export.json").read_text())


def test_accelforge_counts_the_operations_solar_counts(captured, accelforge_python, tmp_path):
    folders = {}
    for pid in IDS:
        graph, _ = captured[pid]
        folder = tmp_path / pid
        summary = _core.export_graph(graph, "accelforge", str(folder))
        assert summary.startswith("exported "), summary
        folders[pid] = folder
    r = subprocess.run([accelforge_python, "-c", _ACCELFORGE_CHECK, *map(str, folders.values())],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    for (name, _, expected), pid in zip(PROGRAMS, IDS):
        m = _manifest(folders[pid])
        got = seen[str(folders[pid])]
        solar_macs = captured[pid][1]
        if expected is not None:
            assert solar_macs == expected, pid
        # Per Einsum: AccelForge's operation count is Solar's live points, and a
        # contraction's is its MACs.
        contractions = 0
        for e in m["einsums"]:
            assert got["computes"][e["name"]] == e["operations"], (pid, e["name"])
            if e["class"] != "none":
                assert e["macs"] == e["operations"], (pid, e["name"])
                contractions += got["computes"][e["name"]]
        assert set(got["computes"]) == {e["name"] for e in m["einsums"]}
        assert got["total"] == m["totals"]["operations"]
        # Totals: AccelForge's contraction operations are Solar's MACs for the program.
        assert contractions == solar_macs == m["totals"]["macs"], pid
        # A workload input read once, unpadded and unmasked: its data space is what that
        # access touches, so AccelForge's tensor size is Solar's footprint.
        for e in m["einsums"]:
            if e["mask"]:
                continue
            for a in e["accesses"]:
                if not a["output"] and "pad" not in a and _readers(m, a["tensor"]) == 1:
                    assert got["sizes"][a["tensor"]] == a["footprint"], (pid, a["tensor"])


def _readers(m: dict, tensor: str) -> int:
    """How many accesses read `tensor`; 0 when an einsum writes it (not a workload input)."""
    accesses = [a for e in m["einsums"] for a in e["accesses"] if a["tensor"] == tensor]
    return 0 if any(a["output"] for a in accesses) else len(accesses)


# Timeloop's classic problem (v0.4), as its documentation states it (timeloopfe's v4 problem
# spec and Timeloop's problem-shape parser): problem.shape {name, dimensions: one-letter
# names, coefficients: [{name, default}], data_spaces: at most 5 of {name, projection,
# read_write}, exactly one read_write}; a projection is a list of dimension names or of sums
# of products [[DIM] | [DIM, COEFFICIENT], ...]; problem.instance: an integer for every
# dimension (coefficients may be overridden, densities optional).
def check_timeloop_problem(doc: dict) -> list:
    errors = []

    def need(cond, what):
        if not cond:
            errors.append(what)

    need(isinstance(doc, dict) and "problem" in doc, "top level: no 'problem'")
    if errors:
        return errors
    p = doc["problem"]
    need(isinstance(p, dict) and set(p) <= {"version", "shape", "instance"}, "problem keys")
    need(str(p.get("version", "0.4")) == "0.4", "problem.version is not 0.4")
    shape, instance = p.get("shape"), p.get("instance")
    need(isinstance(shape, dict), "problem.shape")
    need(isinstance(instance, dict), "problem.instance")
    if errors:
        return errors
    need(set(shape) <= {"name", "dimensions", "coefficients", "data_spaces"}, "shape keys")
    need(isinstance(shape.get("name", ""), str), "shape.name")
    dims = shape.get("dimensions")
    need(isinstance(dims, list) and dims and len(set(dims)) == len(dims), "shape.dimensions")
    dims = dims or []
    need(all(isinstance(d, str) and len(d) == 1 and d.isalpha() for d in dims),
         "dimension names are one letter")
    coefficients = {}
    for c in shape.get("coefficients", []):
        need(isinstance(c, dict) and set(c) == {"name", "default"}, f"coefficient {c}")
        need(isinstance(c.get("default"), int), f"coefficient {c} default")
        coefficients[c.get("name")] = c.get("default")
    spaces = shape.get("data_spaces")
    need(isinstance(spaces, list) and 1 <= len(spaces) <= 5, "1 to 5 data_spaces")
    spaces = spaces or []
    names = [s.get("name") for s in spaces]
    need(len(set(names)) == len(names), "data space names are unique")
    need(sum(bool(s.get("read_write", False)) for s in spaces) == 1, "exactly one read_write")
    for s in spaces:
        need(set(s) <= {"name", "projection", "read_write"}, f"data space keys {sorted(s)}")
        need(isinstance(s.get("read_write", False), bool), "read_write is a boolean")
        proj = s.get("projection")
        need(isinstance(proj, list) and proj, f"{s.get('name')}: projection")
        for expr in proj or []:
            if isinstance(expr, str):
                need(expr in dims, f"projection dimension {expr}")
                continue
            need(isinstance(expr, list) and expr, f"projection expression {expr}")
            for term in expr:
                need(isinstance(term, list) and len(term) in (1, 2), f"term {term}")
                need(term[0] in dims, f"term dimension {term}")
                need(len(term) == 1 or term[1] in coefficients, f"term coefficient {term}")
    for key, value in instance.items():
        if key == "densities":
            need(isinstance(value, dict), "instance.densities")
            continue
        need(key in dims or key in coefficients, f"instance key {key}")
        need(isinstance(value, int) and not isinstance(value, bool), f"instance.{key}")
    need(all(isinstance(instance.get(d), int) and instance[d] >= 1 for d in dims),
         "an extent for every dimension")
    return errors


# Timeloop's LoopTree workload (ParseFusedWorkload): `problem` is a list of einsums, each
# {shape: {name, dimensions, data_spaces: [{name, dimensions, projection: "[ISL]",
# read_write}]}, instance: "ISL constraints"}; dimension names are unique workload-wide.
def check_looptree_workload(doc: dict) -> list:
    errors = []
    problems = doc.get("problem") if isinstance(doc, dict) else None
    if not isinstance(problems, list) or not problems:
        return ["problem is not a list"]
    einsum_dims, space_dims = [], {}
    for p in problems:
        shape = p.get("shape", {})
        if set(p) != {"shape", "instance"} or not isinstance(p["instance"], str):
            errors.append(f"problem keys {sorted(p)}")
        einsum_dims += shape.get("dimensions", [])
        writes = 0
        for s in shape.get("data_spaces", []):
            if not (isinstance(s.get("projection"), str) and s["projection"].startswith("[")):
                errors.append(f"{s.get('name')}: projection")
            dims = space_dims.setdefault(s["name"], s.get("dimensions"))
            if dims != s.get("dimensions"):
                errors.append(f"{s['name']}: dimensions differ between einsums")
            writes += bool(s.get("read_write", False))
        if writes != 1:
            errors.append(f"{shape.get('name')}: {writes} read_write data spaces")
    every = einsum_dims + [d for ds in space_dims.values() for d in ds]
    if len(set(every)) != len(every):
        errors.append("dimension names repeat")
    return errors


@pytest.mark.parametrize("pid", IDS)
def test_timeloop_problems_follow_the_schema_and_read_back(captured, pid, tmp_path):
    graph, solar_macs = captured[pid]
    folder = tmp_path / pid
    _core.export_graph(graph, "timeloop", str(folder))
    m = _manifest(folder)
    assert m["schema"] == "solar.export.v1" and m["format"] == "timeloop"
    files = []
    for e in m["einsums"]:
        assert e["timeloop_problem"] == f"problems/{e['name']}.yaml"
        text = (folder / e["timeloop_problem"]).read_text()
        assert check_timeloop_problem(yaml.safe_load(text)) == [], e["name"]
        files.append((e["timeloop_problem"], text))
    assert check_looptree_workload(yaml.safe_load((folder / "workload.yaml").read_text())) == []

    # Re-read: one op per problem, in the manifest's order, with the same MACs and bytes read
    # (each access's footprint at its tensor's width).
    back = _core.read_timeloop_problems(files, "back")
    report = solar.analyze(back, arch="H100_SXM", cache_aware=False)
    rows = {row["name"]: row for row in report.to_dict()["ops"]}
    bits = {t["name"]: t["bits"] for t in m["tensors"]}
    for e in m["einsums"]:
        row = rows[e["op"]]
        assert int(row["macs"]) == e["macs"], e["name"]
        expected_read = sum(math.ceil(a["footprint"] * bits[a["tensor"]] / 8)
                            for a in e["accesses"] if not a["output"])
        assert int(row["bytes_read"]) == expected_read, e["name"]
    assert int(report.totals.macs) == solar_macs


def test_the_console_script_exports_programs_and_graphs(tmp_path, capsys):
    gemm = tmp_path / "gemm"
    assert cli.main(["solar", "export", str(ROOT / "examples/loops/gemm.py"), "--format",
                     "accelforge", "--out", str(gemm)]) == 0
    out = capsys.readouterr().out
    assert "exported 1 einsum of 'gemm' (134217728 operations, 134217728 MACs)" in out
    assert (gemm / "workload.yaml").is_file() and (gemm / "solar-export.json").is_file()
    # A graph file goes to the C++ CLI: the same command, the same files.
    block = tmp_path / "block"
    assert cli.main(["solar", "export", str(ROOT / "examples/transformer_block.solar"),
                     "--format", "timeloop", "--out", str(block)]) == 0
    m = _manifest(block)
    assert m["totals"]["macs"] == 55838769152  # the README's figure for this block
    assert len(list((block / "problems").glob("*.yaml"))) == m["totals"]["einsums"]


@pytest.mark.parametrize("argv, code, message", [
    (["--format", "nope", "--out", "{tmp}/x"], "usage", "invalid value 'nope'"),
    (["--out", "{tmp}/x"], "usage", "--format"),
    (["--format", "timeloop", "--out", "{tmp}/missing/x"], "io", "does not exist"),
])
def test_bad_export_commands_get_the_cli_exit_codes(tmp_path, capsys, argv, code, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    rc = cli.main(["solar", "export", str(ROOT / "examples/loops/gemm.py"), *argv])
    assert rc == _core.EXIT_CODES[code]
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_graph_file_with_a_bad_format_is_a_usage_error(capfd, tmp_path):
    # A graph goes to the C++ CLI, which writes its error to file descriptor 2.
    rc = cli.main(["solar", "export", str(ROOT / "examples/gemm.solar"), "--format", "nope",
                   "--out", str(tmp_path / "x")])
    assert rc == _core.EXIT_CODES["usage"]
    assert "unknown --format 'nope'" in capfd.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_program_that_raises_is_a_program_error(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n\nclass Model(torch.nn.Module):\n"
                   "    def forward(self, x):\n        raise RuntimeError('boom')\n\n"
                   "def get_inputs():\n    return [torch.randn(2)]\n\n"
                   "def get_init_inputs():\n    return []\n")
    rc = cli.main(["solar", "export", str(bad), "--format", "accelforge", "--out",
                   str(tmp_path / "x")])
    assert rc == _core.EXIT_CODES["program_error"]
    assert "boom" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


# ---- writing into a folder (docs/export.md, "Writing into a folder") ---------------------

def _tree(folder: Path) -> dict:
    """Every file under `folder` (relative path -> contents)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_a_re_export_replaces_exactly_the_earlier_exports_files(tmp_path, capsys):
    out = tmp_path / "out"
    # A 30-einsum Timeloop export (the C++ CLI), then the user's own notes beside it.
    assert cli.main(["solar", "export", str(ROOT / "examples/transformer_block.solar"),
                     "--format", "timeloop", "--out", str(out)]) == 0
    problems = _manifest(out)["totals"]["einsums"]
    assert len(list((out / "problems").glob("*.yaml"))) == problems == 30
    (out / "notes.txt").write_text("mine\n")
    (out / "problems" / "mine.yaml").write_text("mine\n")
    capsys.readouterr()
    # A program's AccelForge export into the same folder (the console script's capture).
    assert cli.main(["solar", "export", str(ROOT / "examples/loops/gemm.py"), "--format",
                     "accelforge", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    # workload.yaml is written by both: replaced; every problem is gone; the user's stay.
    assert f"removed {problems} files of the earlier export that this one does not write" \
        in printed
    assert sorted(_tree(out)) == ["notes.txt", "problems/mine.yaml", "solar-export.json",
                                  "workload.yaml"]
    assert (out / "notes.txt").read_text() == "mine\n"
    m = _manifest(out)
    assert m["format"] == "accelforge" and m["files"] == ["workload.yaml"]
    assert m["totals"]["macs"] == 512 * 1024 * 256  # examples/loops/gemm.py


@pytest.mark.parametrize("source", ["examples/gemm.solar", "program"])
def test_a_folder_that_holds_no_export_is_refused_before_any_work(tmp_path, capfd, source):
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work\n")
    program = tmp_path / "never.py"  # raises if it is ever captured
    program.write_text("import torch\nclass Model(torch.nn.Module):\n"
                       "    def forward(self, x):\n        raise SystemExit('captured')\n"
                       "def get_inputs():\n    return [torch.randn(2)]\n")
    path = str(program) if source == "program" else str(ROOT / source)
    before = _tree(tmp_path)
    rc = cli.main(["solar", "export", path, "--format", "timeloop", "--out", str(out)])
    captured = capfd.readouterr()
    assert rc == _core.EXIT_CODES["io"], captured.err
    assert (f"cannot write '{out}': the folder is not empty and holds no Solar export "
            "(no solar-export.json)") in captured.err
    assert captured.out == "" and "captured" not in captured.err
    assert _tree(tmp_path) == before


def test_an_export_never_replaces_its_program(tmp_path, capsys):
    """A manifest that lists the program itself (a hand-edited one, or a folder shared with
    the sources): a re-export would remove it as a file of the earlier export that it no
    longer writes. The program is an input of the command, so the export is refused."""
    out = tmp_path / "out"
    out.mkdir()
    program = out / "workload.yaml.py"
    program.write_text((ROOT / "examples/loops/gemm.py").read_text())
    (out / "solar-export.json").write_text(json.dumps(
        {"schema": "solar.export.v1", "files": ["workload.yaml.py"]}))
    before = _tree(tmp_path)
    rc = cli.main(["solar", "export", str(program), "--format", "accelforge", "--out", str(out)])
    assert rc == _core.EXIT_CODES["io"]
    assert "the export would replace the input PROGRAM" in capsys.readouterr().err
    assert _tree(tmp_path) == before


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
