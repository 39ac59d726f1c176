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


# ---- output files lose nothing (docs/cli.md, "Output files") ------------------------------

# A program that must never be captured: every refusal below comes before any work.
NEVER_CAPTURED = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        raise SystemExit("captured")
def get_inputs():
    return [torch.randn(2)]
"""


def _snapshot(folder: Path):
    """Every entry under `folder`: its contents (files), mode and link count."""
    seen = {}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        seen[str(p.relative_to(folder))] = (p.read_bytes() if p.is_file() else None,
                                            st.st_mode, st.st_nlink)
    return seen


def _folder_with_inputs(tmp_path: Path) -> Path:
    (tmp_path / "g.solar").write_text(GOOD_TEXT)
    (tmp_path / "p.py").write_text(NEVER_CAPTURED)
    os.link(tmp_path / "p.py", tmp_path / "hard.py")
    os.symlink("g.solar", tmp_path / "link.solar")
    return tmp_path


# (id, args run in the folder, stderr substring): the C++ CLI (graphs) and the console
# script (programs, and --html for either) refuse alike.
ALIASED_OUTPUTS = [
    ("program --json", ["analyze", "p.py", "--json", "p.py"],
     "cannot write 'p.py': --json would replace the input PROGRAM"),
    ("program --html", ["analyze", "p.py", "--html", "p.py"], "--html would replace the input"),
    ("program --save-trace by a hard link", ["analyze", "p.py", "--save-trace", "hard.py"],
     "--save-trace would replace the input PROGRAM 'p.py' (the same file)"),
    ("validate --ski-slope", ["validate", "p.py", "--ski-slope", "p.py"], "would replace"),
    ("inverse program --html", ["inverse", "p.py", "--target-ms", "1", "--html", "p.py"],
     "--html would replace the input PROGRAM"),
    ("graph --ski-slope", ["analyze", "g.solar", "--ski-slope", "g.solar"],
     "cannot write 'g.solar': --ski-slope would replace the input GRAPH"),
    ("graph --json by a symlink", ["analyze", "g.solar", "--json", "link.solar"],
     "--json would replace the input GRAPH 'g.solar' (the same file)"),
    ("graph --html", ["analyze", "g.solar", "--html", "g.solar"], "--html would replace"),
    ("inverse graph --json", ["inverse", "g.solar", "--target-ms", "1", "--json", "g.solar"],
     "--json would replace the input GRAPH"),
    ("graph --json and --html", ["analyze", "g.solar", "--json", "r.out", "--html", "r.out"],
     "--json and --html name the same file"),
    ("program --json and --ski-slope", ["analyze", "p.py", "--json", "r.out", "--ski-slope",
                                        "sub/../r.out"], "--json and --ski-slope name the same"),
]


@pytest.mark.parametrize("args,message", [c[1:] for c in ALIASED_OUTPUTS],
                         ids=[c[0] for c in ALIASED_OUTPUTS])
def test_no_output_replaces_an_input_or_another_output(tmp_path, monkeypatch, args, message):
    monkeypatch.setenv("SOLAR_NO_SERVER", "1")  # this working tree, not a server's
    folder = _folder_with_inputs(tmp_path)
    (folder / "sub").mkdir()
    before = _snapshot(folder)
    r = run_solar(*args, cwd=folder)
    assert r.returncode == solar._core.EXIT_CODES["io"], r.stderr
    assert r.stderr.startswith("solar: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert message in r.stderr
    assert r.stdout == ""
    assert _snapshot(folder) == before


@pytest.mark.parametrize("args", [
    ["analyze", "g.solar", "--json", "r.out"],                 # the C++ CLI
    ["analyze", "g.solar", "--html", "r.out"],                 # the console script's page
    ["inverse", "g.solar", "--target-ms", "1", "--json", "r.out"],
    ["analyze", "p.py", "--save-trace", "r.out"],              # a program, before its capture
], ids=["graph-json", "graph-html", "inverse-json", "program-save-trace"])
def test_a_read_only_output_is_refused_even_for_root(tmp_path, monkeypatch, args):
    monkeypatch.setenv("SOLAR_NO_SERVER", "1")
    folder = _folder_with_inputs(tmp_path)
    (folder / "r.out").write_text("earlier\n")
    (folder / "r.out").chmod(0o444)
    before = _snapshot(folder)
    r = run_solar(*args, cwd=folder)
    assert r.returncode == 3, r.stderr
    assert "cannot write 'r.out': the file is read-only (mode 0444)" in r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == ""
    assert _snapshot(folder) == before


def test_an_existing_output_keeps_its_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("SOLAR_NO_SERVER", "1")
    modes = {"g.json": 0o640, "g.svg": 0o600, "g.html": 0o604, "p.json": 0o640, "p.trace": 0o600}
    for name, mode in modes.items():
        (tmp_path / name).write_text("earlier\n")
        (tmp_path / name).chmod(mode)
    # A graph: the C++ CLI writes the JSON and the chart, the console script the page.
    r = run_solar("analyze", str(EXAMPLES / "gemm.solar"), "--json", str(tmp_path / "g.json"),
                  "--ski-slope", str(tmp_path / "g.svg"), "--html", str(tmp_path / "g.html"))
    assert r.returncode == 0, r.stderr
    # A program: the console script writes them all.
    r = run_solar("analyze", str(EXAMPLES / "loops" / "gemm.py"), "--json",
                  str(tmp_path / "p.json"), "--save-trace", str(tmp_path / "p.trace"))
    assert r.returncode == 0, r.stderr
    for name, mode in modes.items():
        assert (tmp_path / name).read_text() != "earlier\n", name
        assert (tmp_path / name).stat().st_mode & 0o7777 == mode, name
    assert json.loads((tmp_path / "g.json").read_text())["totals"]["macs"] == 4096**3
    assert sorted(os.listdir(tmp_path)) == sorted(modes)  # no temporary left


def _solar_unprivileged(*args: str, cwd: Path):
    """(exit code, stdout, stderr) of `solar ARGS...` run by the unprivileged user in a fork
    of this process (conftest.run_unprivileged), with sys.stdout and sys.stderr bound to
    file descriptors 1 and 2 in the child: under pytest they are pytest's own buffers, and
    what Python writes would otherwise never reach the captured descriptors."""
    import io

    import solar.cli
    from conftest import run_unprivileged

    def main():
        sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), write_through=True)
        return solar.cli.main(["solar", *args])

    return run_unprivileged(main, cwd=cwd)


def _unwritable_folder(unprivileged_dir: Path) -> Path:
    """A folder the unprivileged user may read but not write (root's, 0755), with a graph and
    a program in it."""
    folder = unprivileged_dir / "theirs"
    folder.mkdir(mode=0o755)
    (folder / "g.solar").write_text(GOOD_TEXT)
    (folder / "p.py").write_text(NEVER_CAPTURED)
    return folder


@pytest.mark.parametrize("args,path", [
    (["analyze", "g.solar", "--html", "r.html"], "r.html"),  # the table came first, then errno
    (["analyze", "g.solar", "--json", "r.json"], "r.json"),  # the C++ CLI in this process
    (["analyze", "p.py", "--html", "r.html"], "r.html"),
    (["inverse", "g.solar", "--target-ms", "1", "--html", "r.html"], "r.html"),
], ids=["graph-html", "graph-json", "program-html", "inverse-html"])
def test_an_unwritable_folder_prints_nothing_and_names_the_path(unprivileged_dir, args, path):
    folder = _unwritable_folder(unprivileged_dir)
    code, out, err = _solar_unprivileged(*args, cwd=folder)
    assert code == 3, err
    assert out == ""
    assert err == (f"solar: error: cannot write '{path}': folder '.' does not accept new files "
                   "(Permission denied)\n")
    assert sorted(os.listdir(folder)) == ["g.solar", "p.py"]


def test_the_cxx_executable_refuses_an_unwritable_folder_alike(unprivileged_dir):
    exe = ROOT / "build" / "cpp" / "solar"
    if not exe.exists():
        pytest.skip("the C++ executable is not built (build/cpp/solar)")
    folder = _unwritable_folder(unprivileged_dir)
    # A copy the unprivileged user can reach (the checkout may sit in a folder it cannot enter)
    reachable = unprivileged_dir / "solar"
    shutil.copy2(exe, reachable)
    r = subprocess.run([str(reachable), "analyze", "g.solar", "--json", "r.json"], cwd=folder,
                       capture_output=True, text=True, user=65534, group=65534, timeout=120)
    assert r.returncode == 3 and r.stdout == ""
    assert "cannot write 'r.json': folder '.' does not accept new files" in r.stderr


def test_another_users_file_is_not_replaced(unprivileged_dir):
    """The unprivileged user may create files in its folder, and so could rename over root's
    file there: it must not, since it could not write that file in place."""
    (unprivileged_dir / "g.solar").write_text(GOOD_TEXT)
    theirs = unprivileged_dir / "r.json"
    theirs.write_text("root's\n")
    theirs.chmod(0o644)
    code, out, err = _solar_unprivileged("analyze", "g.solar", "--json", "r.json",
                                         cwd=unprivileged_dir)
    assert code == 3 and out == ""
    assert "cannot write 'r.json': the file is not writable by this user" in err
    assert theirs.read_text() == "root's\n" and theirs.stat().st_uid == 0
