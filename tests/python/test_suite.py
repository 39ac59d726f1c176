"""`solar suite DIR`: a folder of small real PyTorch programs (good ones, one that raises,
one that hangs, two that kill their process, one with an unanalyzed op, files that are not
programs) analyzed in one run; the suite must finish and report each outcome."""

from __future__ import annotations

import csv
import io
import json
import os
import textwrap

import pytest

pytest.importorskip("torch")

from conftest import run_solar  # noqa: E402

# Seconds before a program's worker is killed: small, so the hanging program costs little,
# yet well above what a tiny capture takes on a loaded 2-core CI machine.
TIMEOUT_S = 10

HEADER = "import torch\n"
GOOD_MM = """
class Model(torch.nn.Module):
    def forward(self, a, b):
        return a @ b
M, N, K = 24, 40, 56
def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]
def get_init_inputs():
    return []
"""
GOOD_LINEAR = """
class Model(torch.nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc = torch.nn.Linear(i, o, bias=False)
    def forward(self, x):
        return self.fc(x)
batch_size = 8
in_features, out_features = 48, 24
def get_inputs():
    return [torch.randn(batch_size, in_features)]
def get_init_inputs():
    return [in_features, out_features]
"""
RAISES = """
class Model(torch.nn.Module):
    def forward(self, x):
        raise ValueError("this program fails on purpose")
def get_inputs():
    return [torch.randn(2)]
"""
HANGS = """
import time
class Model(torch.nn.Module):
    def forward(self, x):
        time.sleep(3600)
def get_inputs():
    return [torch.randn(2)]
"""
EXITS = """
import os
class Model(torch.nn.Module):
    def forward(self, x):
        os._exit(17)
def get_inputs():
    return [torch.randn(2)]
"""
SEGFAULTS = """
import ctypes
class Model(torch.nn.Module):
    def forward(self, x):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
def get_inputs():
    return [torch.randn(2)]
"""
UNANALYZED = """
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.fft.rfft(x).abs()
def get_inputs():
    return [torch.randn(4, 16)]
"""
GREEDY = """
class Model(torch.nn.Module):
    def forward(self, x):
        hog = bytearray(12 << 30)  # 12 GiB: past --memory-limit
        return x + len(hog)
def get_inputs():
    return [torch.randn(2)]
"""
BROKEN = """
class Model(torch.nn.Module):
    def forward(self, x)
        return x
def get_inputs():
    return [torch.randn(2)]
"""


def write(folder, rel, body, header=HEADER):
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + textwrap.dedent(body))
    return path


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("programs")
    write(d, "a_mm.py", GOOD_MM)
    write(d, "b_fft.py", UNANALYZED)
    write(d, "c_raises.py", RAISES)
    write(d, "helper.py", "SCALE = 3\n")  # not a program: skipped
    write(d, "nested/__init__.py", "", header="")
    write(d, "nested/d_linear.py", GOOD_LINEAR)
    write(d, "nested/e_hangs.py", HANGS)
    write(d, "nested/f_exits.py", EXITS)
    write(d, "nested/g_segfaults.py", SEGFAULTS)
    write(d, "nested/h_broken.py", BROKEN)
    write(d, "nested/i_greedy.py", GREEDY)
    return d


@pytest.fixture(scope="module")
def suite_run(programs, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    js, cs = out / "suite.json", out / "suite.csv"
    r = run_solar("suite", str(programs), "--jobs", "2", "--timeout", str(TIMEOUT_S),
                  "--set", "batch_size=2", "--json", str(js), "--csv", str(cs),
                  "--no-crosscheck", "--memory-limit", "8")
    return r, json.loads(js.read_text()) if js.exists() else None, \
        cs.read_text() if cs.exists() else None, programs


def by_name(doc):
    return {e["program"]["source"].rsplit("/", 1)[-1]: e for e in doc["programs"]}


def test_the_suite_finishes_despite_failures(suite_run):
    r, doc, _, programs = suite_run
    assert r.returncode == 0, r.stderr  # the suite ran: 0, whatever the programs did
    assert doc["schema"] == "solar.suite.v1"
    names = [e["program"]["source"] for e in doc["programs"]]
    rel = [n[len(str(programs)) + 1:] for n in names]
    assert rel == ["a_mm.py", "b_fft.py", "c_raises.py", "nested/d_linear.py",
                   "nested/e_hangs.py", "nested/f_exits.py", "nested/g_segfaults.py",
                   "nested/h_broken.py", "nested/i_greedy.py"]  # sorted, recursive; __init__ and helper skipped


def test_good_programs_have_their_macs(suite_run):
    _, doc, _, _ = suite_run
    e = by_name(doc)
    M, N, K = 24, 40, 56
    mm = e["a_mm.py"]
    assert mm["schema"] == "solar.report.v1" and mm["program"]["frontend"] == "torch"
    assert mm["totals"]["macs"] == M * N * K  # one GEMM: M*N*K
    assert mm["coverage"]["unanalyzed"] == 0
    assert len(mm["ops"]) == mm["coverage"]["ops"] == 1  # the per-op rows are there
    B, I, O = 2, 48, 24  # batch_size shrunk by --set
    lin = e["d_linear.py"]
    assert lin["totals"]["macs"] == B * I * O  # x @ W^T: B*I*O
    assert "H100_SXM" in str(lin["devices"])


def test_set_applies_only_where_assigned(suite_run):
    _, doc, _, _ = suite_run
    e = by_name(doc)
    assert e["d_linear.py"]["suite"]["overrides"] == {"batch_size": "2"}
    assert e["a_mm.py"]["suite"]["overrides"] == {}  # no batch_size: silently not applied
    assert e["a_mm.py"]["suite"]["status"] == "analyzed"
    # measured, not a default: a number (a tiny program may round to 0.0 seconds)
    assert isinstance(e["a_mm.py"]["suite"]["cpu_seconds"], float)
    assert e["a_mm.py"]["suite"]["cpu_seconds"] >= 0
    # the worker's peak memory while it ran the program: at least torch's own (> 100 MB),
    # and the summary names the largest and the slowest of the programs that answered
    peaks = {n: x["suite"]["peak_rss_bytes"] for n, x in e.items()
             if "peak_rss_bytes" in x["suite"]}
    assert peaks["a_mm.py"] > 100e6
    largest = doc["summary"]["largest_memory"]
    assert largest["peak_rss_bytes"] == max(peaks.values())
    assert os.path.basename(largest["source"]) in peaks
    slowest = doc["summary"]["slowest"]
    assert slowest["wall_seconds"] == max(x["suite"]["wall_seconds"] for x in e.values())


def test_failures_have_their_cause(suite_run):
    _, doc, _, _ = suite_run
    e = by_name(doc)
    raised = e["c_raises.py"]["error"]
    assert raised["cause"] == "program_error"
    assert "this program fails on purpose" in raised["message"]
    hang = e["e_hangs.py"]["error"]
    assert hang["cause"] == "timeout" and f"{TIMEOUT_S} s" in hang["message"]
    assert "e_hangs.py" in hang["output_tail"]  # the stack dumped before the kill
    exited = e["f_exits.py"]["error"]
    assert exited["cause"] == "crash" and "code 17" in exited["message"]
    segv = e["g_segfaults.py"]["error"]
    assert segv["cause"] == "crash" and "SIGSEGV" in segv["message"]
    broken = e["h_broken.py"]["error"]
    assert broken["cause"] == "syntax_error"
    assert e["i_greedy.py"]["error"]["cause"] == "out_of_memory"  # RLIMIT_AS, not the OOM killer
    for name in ("c_raises.py", "e_hangs.py", "f_exits.py", "g_segfaults.py", "h_broken.py",
                 "i_greedy.py"):
        assert e[name]["suite"]["status"] == "failed"
        assert set(e[name]) == {"program", "error", "suite"}


def test_summary_counts(suite_run):
    r, doc, _, _ = suite_run
    s = doc["summary"]
    assert s["programs"] == 9 and s["analyzed"] == 3 and s["zero_unanalyzed"] == 2
    assert s["failures"] == {"crash": 2, "out_of_memory": 1, "program_error": 1,
                             "syntax_error": 1, "timeout": 1}
    assert s["unanalyzed_ops"] >= 1
    assert any(row["op"].startswith("aten::_fft_r2c") for row in s["unanalyzed_by_op"])
    assert s["skipped"]["count"] == 2
    assert {f["source"].rsplit("/", 1)[-1] for f in s["skipped"]["files"]} == \
        {"helper.py", "__init__.py"}
    assert s["crosscheck"] == {} and s["validation"] == {}  # neither was asked for
    dead = [p["coverage"]["dead"] for p in doc["programs"] if "coverage" in p]
    assert s["dead_ops"] == sum(dead) and s["with_dead"] == sum(d > 0 for d in dead)
    out = r.stdout
    assert f"dead ops (not counted)  {sum(dead)} in" in out
    assert "analyzed                3" in out
    assert "aten::_fft_r2c" in out
    assert "timeout" in out and "crash" in out
    assert "9/9 done" in r.stderr  # progress lines (stderr is not a terminal here)


def test_the_summary_names_the_programs_with_the_most_time_and_headroom(suite_run):
    """Beside the counts: the analyzed programs with the most fused SOL on the first device,
    and those with the most headroom (eager reference / fused SOL), in order."""
    r, doc, _, _ = suite_run
    h = doc["summary"]["heaviest"]
    analyzed = [p for p in doc["programs"] if "error" not in p]
    fused = {p["program"]["source"]: p["devices"]["H100_SXM"]["fused"]["seconds"]
             for p in analyzed}
    assert h["arch"] == "H100_SXM"
    assert [row["source"] for row in h["most_time"]] == sorted(fused, key=lambda s: -fused[s])
    for row in h["most_time"]:
        level = doc["programs"][[p["program"]["source"] for p in doc["programs"]].index(
            row["source"])]["devices"]["H100_SXM"][row["reference"]]
        assert row["headroom"] == pytest.approx(level["seconds"] / row["fused_seconds"])
    headrooms = [row["headroom"] for row in h["most_headroom"]]
    assert headrooms == sorted(headrooms, reverse=True)
    top = h["most_time"][0]["source"].rsplit("/", 1)[-1]
    text = r.stdout[r.stdout.index("most time on H100_SXM (fused SOL)"):]
    assert top in text.splitlines()[1] and "most headroom on H100_SXM" in text


def test_csv_rows(suite_run):
    _, doc, text, _ = suite_run
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["source"] for r in rows] == [e["program"]["source"] for e in doc["programs"]]
    row = {r["source"].rsplit("/", 1)[-1]: r for r in rows}
    M, N, K = 24, 40, 56
    assert row["a_mm.py"]["macs"] == str(M * N * K)
    assert row["a_mm.py"]["status"] == "analyzed" and row["a_mm.py"]["unanalyzed"] == "0"
    assert float(row["a_mm.py"]["H100_SXM_fused_seconds"]) > 0
    assert row["b_fft.py"]["unanalyzed"] != "0"
    assert row["e_hangs.py"]["error_cause"] == "timeout"
    assert row["g_segfaults.py"]["status"] == "failed"


def test_usage_and_io_errors(tmp_path):
    assert run_solar("suite", str(tmp_path / "missing")).returncode == 3
    write(tmp_path, "p.py", GOOD_MM)
    r = run_solar("suite", str(tmp_path), "--set", "no_equals_sign")
    assert r.returncode == 2 and "NAME=VALUE" in r.stderr
    assert run_solar("suite", str(tmp_path), "--jobs", "0").returncode == 2
    r = run_solar("suite", str(tmp_path), "--arch", "NO_SUCH_GPU")
    assert r.returncode == 6 and "NO_SUCH_GPU" in r.stderr
    r = run_solar("suite", str(tmp_path), "--policy", "bogus")
    assert r.returncode == 2 and "bogus" in r.stderr
    r = run_solar("suite", str(tmp_path), "--json", str(tmp_path / "no" / "dir" / "x.json"))
    assert r.returncode == 3  # checked before any program runs
    r = run_solar("suite", str(tmp_path / "p.py"))
    assert r.returncode == 2 and "not a folder" in r.stderr


@pytest.mark.parametrize("args,message", [
    (["--json", "{dir}/a_mm.py"], "--json would replace the input PROGRAM"),
    (["--csv", "{dir}/notes.py"], "--csv would replace the input PROGRAM"),  # not a program,
    # yet a file the suite reads
    (["--html", "{tmp}/t.json", "--timings", "{tmp}/t.json"], "--html would replace the input "
                                                             "--timings"),
    (["--json", "{tmp}/r.out", "--csv", "{tmp}/r.out"], "--json and --csv name the same file"),
    (["--plot", "{dir}/a_mm", "--timings", "{tmp}/t.json", "--csv", "{dir}/a_mm.svg"],
     "--csv and --plot name the same file"),
], ids=["json-is-a-program", "csv-is-a-file-of-dir", "html-is-the-timings", "json-and-csv",
        "csv-and-plot"])
def test_no_output_replaces_a_file_the_suite_reads(tmp_path, args, message):
    """Refused before any program runs (the one here would take the timeout), nothing
    written."""
    d = tmp_path / "progs"
    write(d, "a_mm.py", HANGS)
    write(d, "notes.py", "# not a program\n")
    (tmp_path / "t.json").write_text("{}")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    args = [a.format(dir=d, tmp=tmp_path) for a in args]
    r = run_solar("suite", str(d), "--timeout", "60", *args)
    assert r.returncode == 3, r.stderr
    assert r.stderr.startswith("solar suite: error: cannot write ") and message in r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == ""
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_validate_and_crosscheck(tmp_path):
    write(tmp_path, "a_mm.py", GOOD_MM)
    write(tmp_path, "sub/b_mm_relu.py", GOOD_MM.replace("a @ b", "torch.relu(a @ b)"))
    js = tmp_path / "s.json"
    r = run_solar("suite", str(tmp_path), "--validate", "--json", str(js), "--quiet", "--no-ops",
                  "--arch", "H100_SXM,B200", "--timeout", "120")
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    assert "/2 done" not in r.stderr  # --quiet: no progress
    for e in doc["programs"]:
        assert e["validation"]["status"] == "passed", e.get("validation")
        assert "crosscheck" in e
        assert "ops" not in e and e["coverage"]["ops"] >= 1  # --no-ops drops the rows only
    assert doc["summary"]["validation"] == {"passed": 2}
    assert doc["summary"]["crosscheck"] == {"agree": 2}  # a GEMM: M*N*K both ways
    assert doc["options"]["archs"] == ["H100_SXM", "B200"]


def test_cache_aware_mode_and_opt_out(tmp_path):
    write(tmp_path, "a_mm.py", GOOD_MM)
    runs = {"provable": ["--mode", "provable"], "skipped": ["--no-cache-aware"]}
    docs = {}
    for name, flags in runs.items():
        js = tmp_path / f"{name}.json"
        r = run_solar("suite", str(tmp_path), "--no-crosscheck", "--quiet", "--json", str(js),
                      "--timeout", "120", *flags)
        assert r.returncode == 0, r.stderr
        docs[name] = json.loads(js.read_text())["programs"][0]
    provable = docs["provable"]["devices"]["H100_SXM"]["cache_aware"]
    assert provable["available"] and provable["mode"] == "provable"
    skipped = docs["skipped"]["devices"]["H100_SXM"]["cache_aware"]
    assert not skipped["available"] and "--no-cache-aware" in skipped["reason"]
    assert "ski_slope" not in docs["skipped"] and "ski_slope" in docs["provable"]
    assert run_solar("suite", str(tmp_path), "--mode", "best").returncode == 2


def test_timings_are_joined_with_the_bounds_and_plotted(tmp_path):
    from solar.programs import ProgramOptions, analyze_file

    write(tmp_path, "level1/a_mm.py", GOOD_MM)
    write(tmp_path, "level1/b_mm_relu.py", GOOD_MM.replace("a @ b", "torch.relu(a @ b)"))
    fused_ms = {}
    for name in ("a_mm.py", "b_mm_relu.py"):
        r = analyze_file(str(tmp_path / "level1" / name),
                         ProgramOptions(archs=["H100_SXM"], crosscheck=False)).report
        fused_ms[name] = r.devices["H100_SXM"].fused.seconds * 1e3
    # a_mm: 4x its fused SOL (headroom 4); b_mm_relu: half of it, impossible (a violation)
    timings = {"level1": {"a_mm.py": {"min": 4 * fused_ms["a_mm.py"], "mean": 5.0},
                          "b_mm_relu.py": {"min": 0.5 * fused_ms["b_mm_relu.py"], "mean": 5.0}}}
    tfile = tmp_path / "timings.json"
    tfile.write_text(json.dumps(timings))
    js, prefix = tmp_path / "s.json", tmp_path / "scatter"
    r = run_solar("suite", str(tmp_path / "level1"), "--no-crosscheck", "--quiet", "--json",
                  str(js), "--timings", str(tfile), "--arch", "H100_SXM", "--plot", str(prefix),
                  "--timeout", "120")
    assert r.returncode == 0, r.stderr
    joined = json.loads(js.read_text())["summary"]["headroom"]
    rows = {row["problem"]: row for row in joined["rows"]}
    assert rows["a_mm.py"]["headroom"]["fused"] == pytest.approx(4.0)
    assert [v["source"].endswith("b_mm_relu.py") for v in joined["violations"]] == [True]
    assert joined["levels"]["level1"]["violations"] == 1
    assert "VIOLATION" in r.stdout and "b_mm_relu.py" in r.stdout
    assert (tmp_path / "scatter.svg").exists() and (tmp_path / "scatter.png").exists()
    # one device only, and a plot needs timings
    assert run_solar("suite", str(tmp_path), "--timings", str(tfile),
                     "--arch", "H100_SXM,B200").returncode == 2
    assert run_solar("suite", str(tmp_path), "--plot", str(prefix)).returncode == 2
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert run_solar("suite", str(tmp_path), "--timings", str(bad)).returncode == 4


# --shrink: each program's integer size constants reduced, keeping the file's relations;
# a program that raises at the reduced size is retried larger.
GROUPED = """
class Model(torch.nn.Module):
    def __init__(self, c, g):
        super().__init__()
        self.fc = torch.nn.Linear(c, c)
        self.gn = torch.nn.GroupNorm(g, c)
    def forward(self, x):
        return self.gn(self.fc(x))
batch_size = 24
channels, num_groups = 1024, 64
def get_inputs():
    return [torch.randn(batch_size, channels)]
def get_init_inputs():
    return [channels, num_groups]
"""
NEEDS_ROOM = """
class Model(torch.nn.Module):
    def forward(self, x):
        for _ in range(6):  # six 2x2 poolings: at least 64 pixels
            x = torch.nn.functional.max_pool2d(x, 2)
        return x
batch_size = 2
height, width = 256, 256
def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]
"""


def test_shrink_keeps_divisibility_and_equality():
    import ast

    from solar.shrink import int_constants, shrink_overrides

    tree = ast.parse(textwrap.dedent("""
        batch_size = 24
        in_features = out_features = 8192
        num_groups = 512
        kernel_size = 3
        D, H, W = 16, 32, 32
        N = 2048 * 2
        scale = 2.0
        flag = True
        derived = in_features * 2
        input_shape = (4096, 3)
    """))
    consts = int_constants(tree)
    # literals, tuple elements and literal arithmetic, tuples of literals element by element;
    # not floats, bools, names computed from others
    assert consts == {"batch_size": 24, "in_features": 8192, "out_features": 8192,
                      "num_groups": 512, "kernel_size": 3, "D": 16, "H": 32, "W": 32,
                      "N": 4096, "input_shape[0]": 4096, "input_shape[1]": 3}
    shrunk = shrink_overrides(consts, 16)
    assert set(shrunk) == {"batch_size", "in_features", "out_features", "num_groups", "H", "W",
                           "N", "input_shape"}  # only constants above the limit change
    full = dict(consts)
    for k, v in shrunk.items():
        if k == "input_shape":
            new = ast.literal_eval(v)  # a tuple again, its small element kept
            assert isinstance(new, tuple) and new[1] == 3 and new[0] < 4096
            full["input_shape[0]"] = new[0]
        else:
            assert int(v) < consts[k]
            full[k] = int(v)
    assert max(full.values()) <= 32
    assert full["in_features"] == full["out_features"]  # equal stays equal
    assert full["batch_size"] == 2  # a batch size is two samples, and no divisor
    for u in consts:  # every other divisor still divides
        for v in consts:
            if 1 < consts[u] < consts[v] and consts[v] % consts[u] == 0 and \
                    "batch_size" not in (u, v):
                assert full[v] % full[u] == 0, (u, v, full)
    # groups stay a proper divisor: at least 2 features per group
    assert full["in_features"] // full["num_groups"] >= 2
    # nothing above the limit: only the batch size changes
    assert shrink_overrides(consts, 10_000) == {"batch_size": "2"}


def test_set_replaces_a_name_of_a_tuple_assignment(tmp_path):
    from solar.frontends.torch.capture import load_program

    p = write(tmp_path, "t.py", NEEDS_ROOM)
    mod = load_program(str(p), {"width": "64"})
    assert (mod.height, mod.width) == (256, 64)
    assert list(mod.get_inputs()[0].shape) == [2, 3, 256, 64]


def test_suite_shrink_validates_small_and_retries_larger(tmp_path):
    write(tmp_path, "a_grouped.py", GROUPED)
    write(tmp_path, "b_needs_room.py", NEEDS_ROOM)
    js = tmp_path / "s.json"
    r = run_solar("suite", str(tmp_path), "--shrink", "16", "--validate", "--no-crosscheck",
                  "--json", str(js), "--quiet", "--timeout", "120")
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    assert doc["options"]["shrink"] == 16
    e = by_name(doc)
    g = e["a_grouped.py"]
    assert g["validation"]["status"] == "passed", g["validation"]
    ov = {k: int(v) for k, v in g["suite"]["overrides"].items()}
    assert set(ov) == {"batch_size", "channels", "num_groups"} and max(ov.values()) <= 16
    assert ov["batch_size"] == 2
    assert ov["channels"] % ov["num_groups"] == 0
    assert ov["channels"] // ov["num_groups"] >= 2  # GroupNorm over 2+ channels per group
    assert g["suite"]["shrink"] == {"limit": 16, "rejected": []}
    room = e["b_needs_room.py"]
    assert room["validation"]["status"] == "passed", room["validation"]
    # 16 and 32 pixels cannot take six poolings: the program raised, 64 is the first that runs
    assert room["suite"]["shrink"]["limit"] == 64
    assert [x["limit"] for x in room["suite"]["shrink"]["rejected"]] == [16, 32]
    assert room["suite"]["overrides"] == {"height": "64", "width": "64"}
    assert run_solar("suite", str(tmp_path), "--shrink", "0").returncode == 2
