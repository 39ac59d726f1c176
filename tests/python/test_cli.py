"""The `solar` command: outputs, exit codes, one-line errors, no partial output files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import solar
from conftest import EXAMPLES, ROOT, run_solar

GOOD_TEXT = """graph g
a = f32[64,32] input
b = f32[32,16] weight
c = f32[64,16]{output} einsum "mk,kn->mn" (a, b)
"""

# (id, file name, file contents or None for "no file", extra args, exit code, stderr substring)
BAD_INPUTS = [
    ("missing file", "nope.solar", None, [], 3, "nope.solar"),
    ("malformed json", "bad.json", '{"schema": "solar.graph.v1", "tensors": [', [], 4, "bad.json"),
    ("json with the wrong schema", "wrong.json", json.dumps({"schema": "solar.graph.v0"}), [], 4,
     "schema"),
    ("json with a wrong field type", "type.json",
     json.dumps({"schema": "solar.graph.v1", "name": "g", "tensors": 3, "ops": []}), [], 4,
     "tensors"),
    ("text syntax error at line 3", "syntax.solar",
     "graph g\na = f32[4] input\nb = f32[4 einsum \"i->i\" (a)\n", [], 4, "syntax.solar:3"),
    ("invalid graph: rank mismatch", "rank.solar",
     "graph g\na = f32[4,8] input\nb = f32[4,8]{output} einsum [i=4,j=8] none relu($0) (a[i]) -> [i,j]\n",
     [], 5, "rank.solar"),
    ("unknown device", "good.solar", GOOD_TEXT, ["--arch", "H100_SXM", "--arch", "Z9000"], 6,
     "Z9000"),
    ("bad --policy", "good.solar", GOOD_TEXT, ["--policy", "fastest"], 2, "--policy"),
    ("bad --cache-state", "good.solar", GOOD_TEXT, ["--cache-state", "hot"], 2, "--cache-state"),
    ("unknown option", "good.solar", GOOD_TEXT, ["--frobnicate"], 2, "frobnicate"),
]


@pytest.mark.parametrize(
    "name,contents,extra,code,message",
    [case[1:] for case in BAD_INPUTS],
    ids=[case[0] for case in BAD_INPUTS],
)
def test_bad_inputs(tmp_path, name, contents, extra, code, message):
    if contents is not None:
        (tmp_path / name).write_text(contents)
    before = sorted(os.listdir(tmp_path))
    out = tmp_path / "report.json"
    r = run_solar("analyze", str(tmp_path / name), "--json", str(out), *extra)
    assert r.returncode == code, r.stderr
    assert r.stderr.startswith("solar: error: "), r.stderr
    assert message in r.stderr
    assert r.stderr.count("\n") == 1, f"expected one line, got: {r.stderr!r}"
    assert "Traceback" not in r.stderr
    assert r.stdout == ""
    # Nothing written: no report, no temporary file.
    assert sorted(os.listdir(tmp_path)) == before


def test_failed_run_keeps_the_previous_report(tmp_path):
    out = tmp_path / "report.json"
    out.write_text("previous\n")
    r = run_solar("analyze", str(tmp_path / "missing.solar"), "--json", str(out))
    assert r.returncode == 3
    assert out.read_text() == "previous\n"


def test_unwritable_output_folder(tmp_path):
    r = run_solar("analyze", str(EXAMPLES / "gemm.solar"), "--json", str(tmp_path / "no" / "r.json"))
    assert r.returncode == 3
    assert "does not exist" in r.stderr
    assert os.listdir(tmp_path) == []


def test_debug_adds_details_after_the_error_line(tmp_path):
    bad = tmp_path / "syntax.solar"
    bad.write_text("graph g\na = f32[4 input\n")
    plain = run_solar("analyze", str(bad))
    debug = run_solar("analyze", str(bad), "--debug")
    assert plain.returncode == debug.returncode == 4
    assert debug.stderr.startswith(plain.stderr)
    assert "solar: debug:" in debug.stderr and "solar: debug:" not in plain.stderr


def test_analyze_writes_table_and_json(tmp_path):
    out = tmp_path / "gemm.report.json"
    r = run_solar("analyze", str(EXAMPLES / "gemm.solar"), "--arch", "H100_SXM", "--arch", "B200",
                  "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "H100_SXM" in r.stdout and "B200" in r.stdout
    report = json.loads(out.read_text())
    assert report["schema"] == "solar.report.v1"
    assert set(report["devices"]) == {"H100_SXM", "B200"}
    assert report["totals"]["macs"] == 4096**3
    assert os.listdir(tmp_path) == ["gemm.report.json"]


def test_json_to_stdout_is_the_whole_output():
    r = run_solar("analyze", "examples/conv_resnet.solar", "--json", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["totals"]["macs"] == 8 * 64 * 56 * 56 * 64 * 3 * 3


def test_top_limits_the_op_rows():
    few = run_solar("analyze", "examples/transformer_block.solar", "--top", "1")
    many = run_solar("analyze", "examples/transformer_block.solar", "--top", "20")
    assert few.returncode == many.returncode == 0
    assert len(few.stdout.splitlines()) < len(many.stdout.splitlines())


def test_version_and_help():
    r = run_solar("--version")
    assert r.returncode == 0
    assert r.stdout.strip() == f"solar {solar.__version__}"
    h = run_solar("--help")
    assert h.returncode == 0 and "analyze" in h.stdout and "arch" in h.stdout


def test_arch_list_and_show():
    lst = run_solar("arch", "list")
    assert lst.returncode == 0
    for device_id in ("H100_SXM", "B200", "host"):
        assert device_id in lst.stdout
    show = run_solar("arch", "show", "B200", "--json")
    assert show.returncode == 0
    assert json.loads(show.stdout)["id"] == "B200"
    bad = run_solar("arch", "show", "Z9000")
    assert bad.returncode == 6 and bad.stderr.startswith("solar: error: ")


def test_python_programs_are_routed_to_the_frontend_dispatch(tmp_path):
    # A .py file goes to the PyTorch frontend, which needs a KernelBench-format program.
    pytest.importorskip("torch")
    prog = tmp_path / "model.py"
    prog.write_text("x = 1\n")
    r = run_solar("analyze", str(prog))
    assert r.returncode == 4  # not a program Solar can read: a parse error
    assert r.stderr.startswith("solar: error: ") and "Model" in r.stderr


def test_console_script_is_installed():
    exe = shutil.which("solar", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("solar is not installed as a console script in this environment")
    r = subprocess.run([exe, "--version"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip() == f"solar {solar.__version__}"


def test_main_returns_the_exit_code(capfd):
    from solar.cli import main

    assert main(["solar", "analyze", str(ROOT / "nope.solar")]) == 3
    assert "solar: error:" in capfd.readouterr().err


def _run_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter importing this solar, stdout a buffered pipe (no
    PYTHONUNBUFFERED: what the process holds unflushed at exit must still arrive)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(solar.__file__).parent.parent),
                                         env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, env=env, timeout=300)


def test_the_exit_without_teardown_still_runs_atexit_and_flushes(tmp_path):
    # solar.cli.run ends with os._exit: atexit handlers must still run, buffered output
    # (Python's and the C++ side's) must arrive whole, and the exit code must be main's.
    r = _run_python(
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stdout.write('atexit ran\\n'))\n"
        "from solar.cli import run\n"
        "sys.stdout.write('python side\\n')\n"
        "run(['solar', 'analyze', 'examples/transformer_block.solar', '--json', '-'])\n",
        tmp_path)
    assert r.returncode == 0, r.stderr
    head, tail = "python side\n", "atexit ran\n"
    assert r.stdout.startswith(head) and r.stdout.endswith(tail)
    assert json.loads(r.stdout[len(head):-len(tail)])["schema"] == "solar.report.v1"
    bad = _run_python("from solar.cli import run\nrun(['solar', 'analyze', 'nope.solar'])\n",
                      tmp_path)
    assert bad.returncode == 3 and bad.stderr.startswith("solar: error: ")


def test_the_exit_waits_for_a_live_thread(tmp_path):
    # A non-daemon thread still running at the end gets the normal exit, which joins it.
    marker = tmp_path / "thread.txt"
    r = _run_python(
        "import threading, time\n"
        "def late():\n"
        "    time.sleep(0.5)\n"
        f"    open({str(marker)!r}, 'w').write('done')\n"
        "threading.Thread(target=late).start()\n"
        "from solar.cli import run\n"
        "run(['solar', '--version'])\n",
        tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("solar ") and marker.read_text() == "done"
