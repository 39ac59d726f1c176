"""JAX programs that shard themselves with shard_map (examples/distributed/jax_*.py and small
programs written here): each rank's graph captured on host devices in a fresh process, its
MACs and its collectives' bytes equal formulas from the program's constants, and the ranks
run together by the executor equal JAX's own sharded run (docs/distributed.md)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

pytest.importorskip("jax")

from conftest import EXAMPLES  # noqa: E402

import solar  # noqa: E402
from solar.frontends.jax.program import load_program  # noqa: E402
from solar.programs import ProgramOptions, analyze_file  # noqa: E402

F32 = 4  # bytes per float32 element
DIST = EXAMPLES / "distributed"


def _constants(name: str):
    """The example's module-level constants, read without running JAX on N devices."""
    import ast

    consts = {}
    for node in ast.parse((DIST / name).read_text()).body:
        if isinstance(node, ast.Assign):
            for tgt in node.targets:
                names = [tgt] if isinstance(tgt, ast.Name) else getattr(tgt, "elts", [])
                vals = ([node.value] if isinstance(tgt, ast.Name)
                        else getattr(node.value, "elts", []))
                for n, v in zip(names, vals):
                    if isinstance(n, ast.Name) and isinstance(v, ast.Constant):
                        consts[n.id] = v.value
    return consts


def _analyze(path, validate=False, devices=None):
    overrides = {"DEVICES": str(devices)} if devices else {}
    return analyze_file(str(path), ProgramOptions(archs=["H100_SXM"], validate=validate,
                                                  crosscheck=False, cache_aware=False,
                                                  overrides=overrides)).report


def _check_complete(report):
    assert report["coverage"]["unanalyzed"] == 0, report["coverage"]["unanalyzed_ops"]


@pytest.mark.parametrize("devices", [4, 2])
def test_tp_mlp_rank_macs_are_the_global_over_n_and_one_all_reduce(devices):
    c = _constants("jax_tp_mlp.py")
    b, d, h = c["B"], c["D"], c["H"]
    rep = _analyze(DIST / "jax_tp_mlp.py", devices=devices)
    _check_complete(rep)
    # x @ w1 and h @ w2 of the whole MLP, split over the ranks: 2 * B * D * H / N.
    assert rep["totals"]["macs"] == 2 * b * d * h // devices
    # One all-reduce of the partial [B, D] sums.
    assert rep["totals"]["comm_bytes_by_kind"] == {"all_reduce": b * d * F32}
    assert rep["distributed"]["route"] == "shard_map"
    assert rep["distributed"]["mesh"] == {"tp": devices}


def test_fsdp_step_gathers_parameters_and_reduce_scatters_gradients():
    c = _constants("jax_fsdp_step.py")
    d, h = c["D"], c["H"]
    rep = _analyze(DIST / "jax_fsdp_step.py")
    _check_complete(rep)
    assert rep["totals"]["comm_bytes_by_kind"] == {
        "all_gather": (d * h + h * d) * F32,  # w1 and w2 gathered whole in the forward
        "reduce_scatter": (d * h + h * d) * F32,  # their whole gradients scattered
        "all_reduce": F32,  # the loss
    }


def test_ring_attention_passes_each_kv_block_n_minus_1_times():
    c = _constants("jax_ring_attention.py")
    n, s, dh = c["DEVICES"], c["S"], c["DH"]
    rep = _analyze(DIST / "jax_ring_attention.py")
    _check_complete(rep)
    block = 2 * (s // n) * dh * F32  # a key and a value block
    assert rep["totals"]["comm_bytes_by_kind"] == {"send": (n - 1) * block,
                                                   "recv": (n - 1) * block}
    # Per step: scores and p @ v, (S/N) x (S/N) x DH each.
    assert rep["totals"]["macs"] == n * 2 * (s // n) * (s // n) * dh


@pytest.mark.parametrize("name, devices", [("jax_tp_mlp.py", 2), ("jax_tp_block.py", 2),
                                           ("jax_fsdp_step.py", 2),
                                           ("jax_ring_attention.py", 2),
                                           ("jax_ring_attention.py", 4)])
def test_examples_validate_across_host_devices(name, devices):
    val = _analyze(DIST / name, validate=True, devices=devices)["validation"]
    assert val["status"] == "passed", val.get("reason")
    assert {o["rank"] for o in val["outputs"]} == set(range(devices))


def _program(tmp_path, body: str):
    p = tmp_path / "prog.py"
    p.write_text(textwrap.dedent(body))
    return p


def test_axis_index_and_a_psum_over_two_axes_on_a_2x2_mesh(tmp_path):
    p = _program(tmp_path, """\
        import jax
        import numpy as np
        from jax import shard_map
        from jax.sharding import Mesh, PartitionSpec as P

        DEVICES = 4
        mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("dp", "tp"))

        def body(x):
            y = x * (jax.lax.axis_index("tp") + 1).astype(x.dtype)
            return jax.lax.psum(y, ("dp", "tp")), jax.lax.psum(y, "tp")

        forward = shard_map(body, mesh=mesh, in_specs=P("dp", "tp"),
                            out_specs=(P(), P("dp")))

        def get_inputs():
            return [np.arange(8 * 6, dtype=np.float32).reshape(8, 6)]
        """)
    rep = _analyze(p, validate=True)
    _check_complete(rep)
    local = (8 // 2) * (6 // 2) * F32
    assert rep["totals"]["comm_bytes_by_kind"] == {"all_reduce": 2 * local}
    groups = sorted((op["group_size"], op["group"]) for op in rep["ops"]
                    if op["class"] == "collective")
    assert groups == [(2, "tp"), (2 * 2, "dp,tp")]
    assert rep["validation"]["status"] == "passed", rep["validation"].get("reason")


def test_a_psum_over_the_outer_axis_of_a_2x2_mesh_validates(tmp_path):
    # dp is the outer axis: its groups are ranks {0, 2} and {1, 3}, not consecutive blocks,
    # so the collective carries its replica groups and the executor runs those.
    p = _program(tmp_path, """\
        import jax
        import numpy as np
        from jax import shard_map
        from jax.sharding import Mesh, PartitionSpec as P

        DEVICES = 4
        mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("dp", "tp"))
        forward = shard_map(lambda x: jax.lax.psum(x, "dp"), mesh=mesh,
                            in_specs=P("dp", "tp"), out_specs=P(None, "tp"))

        def get_inputs():
            return [np.ones((4, 4), np.float32)]
        """)
    rep = _analyze(p, validate=True)
    assert rep["totals"]["comm_bytes_by_kind"] == {"all_reduce": 2 * 2 * F32}  # a 2 x 2 block
    assert rep["validation"]["status"] == "passed", rep["validation"].get("reason")
    assert {o["rank"] for o in rep["validation"]["outputs"]} == {0, 1, 2, 3}


def test_the_executor_runs_replica_groups_that_are_not_blocks():
    """Ranks {0, 2} and {1, 3} all-gather: each group's inputs in its listed order."""
    def gather():
        return solar.parse_graph("x = f32[1] input\ny = f32[2]{output} collective all_gather "
                                 "{size=2, replica_groups=[2,0,1,3], axis=0} (x)\n")
    xs = [np.full(1, r, np.float32) for r in range(4)]
    outs = solar.run_ranks([gather() for _ in range(4)], [{"x": x} for x in xs])
    for r, want in [(0, [2, 0]), (2, [2, 0]), (1, [1, 3]), (3, [1, 3])]:
        np.testing.assert_array_equal(outs[r]["y"], np.array(want, np.float32))
    bad = solar.parse_graph("x = f32[1] input\ny = f32[2]{output} collective all_gather "
                            "{size=2, replica_groups=[0,1], axis=0} (x)\n")
    with pytest.raises(solar.UserError, match="in none of its replica_groups"):
        solar.run_ranks([bad] * 4, [{"x": x} for x in xs])
    # The text and JSON forms carry the groups (and eager) both ways.
    text = ("x = f32[1] input\ny = f32[2]{output} collective all_gather "
            "{size=2, replica_groups=[2,0,1,3], eager=1, axis=0} (x)\n")
    g = solar.parse_graph(text)
    assert solar.parse_graph_json(g.to_json()).to_text() == g.to_text()
    assert "replica_groups=[2,0,1,3], eager=1" in g.to_text()
    with pytest.raises(solar.UserError, match="lists a rank below 0 or twice"):
        solar.parse_graph("x = f32[1] input\ny = f32[2]{output} collective all_gather "
                          "{size=2, replica_groups=[0,0], axis=0} (x)\n")


def test_ops_outside_the_shard_map_are_refused(tmp_path):
    p = _program(tmp_path, """\
        import jax
        import numpy as np
        from jax import shard_map
        from jax.sharding import Mesh, PartitionSpec as P

        DEVICES = 2
        mesh = Mesh(np.array(jax.devices()[:2]), ("x",))

        def forward(a):
            f = shard_map(lambda a: jax.lax.psum(a, "x"), mesh=mesh, in_specs=P("x"),
                          out_specs=P())
            return f(a) * 2

        def get_inputs():
            return [np.ones((4,), np.float32)]
        """)
    with pytest.raises(solar.UnsupportedError, match="outside the jax::shard_map"):
        _analyze(p)


def test_devices_without_a_mesh_is_refused(tmp_path):
    p = _program(tmp_path, """\
        import numpy as np

        import jax.numpy as jnp

        DEVICES = 2

        def forward(a):
            return jnp.sin(a)

        def get_inputs():
            return [np.ones((4,), np.float32)]
        """)
    with pytest.raises(solar.UnsupportedError, match="neither a jax::shard_map nor jit shardings"):
        _analyze(p)


def test_ranks_meet_collectives_of_other_groups_in_their_own_order():
    """Rank 0 all-reduces over {0, 2} (dp) before {0, 1} (tp); rank 2 over {2, 3} before
    {0, 2}: rank 0 waits at dp while rank 2 is at its tp group (rank 3 comes late, after a
    matmul), which is no mismatch."""
    dp = "all_reduce sum {size=2, replica_groups=[0,2,1,3]}"
    tp = "all_reduce sum {size=2}"
    K = 384  # rank 3's matmul: K^3 MACs before its collective
    programs = [f"x = f32[1] input\nb = f32[1] collective {dp} (x)\n"
                f"y = f32[1]{{output}} collective {tp} (b)\n",
                f"x = f32[1] input\ny = f32[1]{{output}} collective {tp} (x)\n",
                f"x = f32[1] input\na = f32[1] collective {tp} (x)\n"
                f"y = f32[1]{{output}} collective {dp} (a)\n",
                f"x = f32[1] input\nm = f32[{K},{K}] input\n"
                f't = f32[]{{output}} einsum "mk,kn->" (m, m)\n'
                f"y = f32[1]{{output}} collective {tp} (x)\n"]
    xs = [np.full(1, r + 1, np.float32) for r in range(4)]  # x_r = r + 1
    inputs = [{"x": x} for x in xs]
    inputs[3]["m"] = np.ones((K, K), np.float32)
    outs = solar.run_ranks([solar.parse_graph(p) for p in programs], inputs)
    a2 = 3 + 4  # rank 2's tp sum with rank 3
    want = [1 + a2 + 2, 1 + a2 + 2, 1 + a2, a2]  # rank 0: (x0 + a2) + x1; rank 1 the same
    assert [float(o["y"][0]) for o in outs] == want


def test_a_send_nobody_reads_still_runs():
    """The executor runs a send whose result no op reads (its peer waits for it)."""
    def swap(peer):
        return solar.parse_graph(f"x = f32[2] input\ns = f32[2] collective send {{peer={peer}}} "
                                 f"(x)\ny = f32[2]{{output}} collective recv {{peer={peer}}} ()\n")
    xs = [np.full(2, 1, np.float32), np.full(2, 2, np.float32)]
    outs = solar.run_ranks([swap(1), swap(0)], [{"x": x} for x in xs])
    np.testing.assert_array_equal(outs[0]["y"], xs[1])
    np.testing.assert_array_equal(outs[1]["y"], xs[0])


def _links(report):
    """(collective kind, group, link) of every link transfer of the analyzed rank."""
    return sorted((op["collective"], op["group"], t["link"]) for op in report["ops"]
                  if op["class"] == "collective"
                  for t in op["links"]["H100_SXM"])


def _on_system(path, system, nodes=None, mesh_links=None):
    return analyze_file(str(path), ProgramOptions(
        archs=[], system=system, nodes=nodes, mesh_links=mesh_links, crosscheck=False,
        cache_aware=False)).report


def test_a_ring_over_two_domains_sends_inside_and_receives_across():
    """Rank 0 of a 4-rank ring on 2 domains of 2: its send goes to rank 1 (its domain), its
    recv comes from rank 3 (the other domain)."""
    rep = _on_system(DIST / "jax_ring_attention.py", "2xH100_SXM", nodes=2)
    assert rep["distributed"]["mesh_links"] == {"sp": "scale-up+scale-out"}
    n = _constants("jax_ring_attention.py")["DEVICES"]
    assert _links(rep) == sorted([("recv", "sp", "scale_out")] * 2 * (n - 1)
                                 + [("send", "sp", "scale_up")] * 2 * (n - 1))


MESH_2X2 = """\
    import jax
    import numpy as np
    from jax import shard_map
    from jax.sharding import Mesh, PartitionSpec as P

    DEVICES = 4
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("dp", "tp"))
    forward = shard_map(lambda x: jax.lax.psum(x, "tp"), mesh=mesh, in_specs=P("dp", "tp"),
                        out_specs=P("dp"))

    def get_inputs():
        return [np.ones((4, 4), np.float32)]
    """


def test_mesh_links_put_the_named_axis_on_its_link(tmp_path):
    p = _program(tmp_path, MESH_2X2)
    # Default: tp (inner) fills a domain of 2.
    rep = _on_system(p, "2xH100_SXM", nodes=2)
    assert rep["distributed"]["mesh_links"] == {"dp": "scale-out", "tp": "scale-up"}
    assert {link for _, _, link in _links(rep)} == {"scale_up"}
    # dp inside the domains: the tp all-reduce crosses them.
    rep = _on_system(p, "2xH100_SXM", nodes=2, mesh_links="dp=scale-up,tp=scale-out")
    assert rep["distributed"]["mesh_links"] == {"dp": "scale-up", "tp": "scale-out"}
    assert {link for _, _, link in _links(rep)} == {"scale_out"}


def test_the_text_report_shows_the_distributed_section_per_collective_and_link():
    rep = analyze_file(str(DIST / "jax_tp_mlp.py"), ProgramOptions(
        archs=[], system="2xH100_SXM", nodes=2, crosscheck=False, cache_aware=False)).report
    text = rep.table()
    n = _constants("jax_tp_mlp.py")["DEVICES"]
    assert f"Distributed (shard_map route): {n} ranks, mesh tp={n}" in text
    assert "mesh axis tp rides scale-up+scale-out" in text
    assert f"all_reduce over tp ({n} ranks)" in text
    # One line per link the all-reduce rides, as the JSON's op links.
    (op,) = [o for o in rep["ops"] if o["class"] == "collective"]
    for t in op["links"]["H100_SXM"]:
        assert f"H100_SXM {t['link']:<9} " in text
    # The system section (overlapped and not) precedes it.
    assert text.index("overlapped") < text.index("Distributed (")


def test_mesh_links_refusals(tmp_path):
    p = _program(tmp_path, MESH_2X2)
    with pytest.raises(solar.UserError, match="not an axis of the mesh"):
        _on_system(p, "2xH100_SXM", nodes=2, mesh_links="pp=scale-up")
    with pytest.raises(solar.UserError, match="more than a scale-up domain"):
        _on_system(p, "2xH100_SXM", nodes=2, mesh_links="dp=scale-up,tp=scale-up")
    with pytest.raises(solar.UserError, match="do not fit in system"):
        _on_system(p, "2xH100_SXM")


def test_mesh_links_on_the_command_line_needs_system_and_a_mesh():
    import subprocess
    import sys

    def solar_cli(*args):
        return subprocess.run([sys.executable, "-m", "solar", *args], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=300)

    p = solar_cli("analyze", str(DIST / "jax_tp_mlp.py"), "--mesh-links", "tp=scale-up")
    assert p.returncode == 2 and "--mesh-links needs --system" in p.stderr, p.stderr
    p = solar_cli("analyze", str(EXAMPLES / "jax" / "matmul_chain.py"), "--system",
                  "8xH100_SXM", "--mesh-links", "tp=scale-up", "--no-crosscheck")
    assert p.returncode == 2 and "declares its mesh" in p.stderr, p.stderr


def test_the_server_which_preloads_jax_hands_the_capture_to_a_fresh_process(tmp_path):
    """A server has imported JAX with one device; a served validate of a 2-device program
    still captures and runs it on 2 host devices."""
    import json
    import os
    import re
    import shutil
    import subprocess
    import sys
    import tempfile
    import time

    from conftest import ROOT

    top = tempfile.mkdtemp(prefix="solar-test-", dir="/tmp")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_CURRENT_TEST", "SOLAR_NO_SERVER")}
    env.update(SOLAR_SERVER_DIR=os.path.join(top, "sockets"), PYTHONUNBUFFERED="1")
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(str(ROOT / p)
                                            for p in env["PYTHONPATH"].split(os.pathsep))

    def solar_cli(*args):
        return subprocess.run([sys.executable, "-m", "solar", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=300)

    def served():
        m = re.search(r"(\d+) command\(s\) served", solar_cli("server", "status").stdout)
        return int(m.group(1)) if m else -1

    try:
        assert solar_cli("server", "start", "--idle", "5").returncode == 0
        before = served()
        for _ in range(50):  # the status answers once the server listens
            if before >= 0:
                break
            time.sleep(0.2)
            before = served()
        out = tmp_path / "v.json"
        r = solar_cli("validate", str(DIST / "jax_tp_mlp.py"), "--set", "DEVICES=2",
                      "--no-crosscheck", "--json", str(out))
        assert r.returncode == 0, r.stderr
        deadline = time.monotonic() + 30  # the count moves when the server reaps the child
        while served() != before + 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert served() == before + 1
        rep = json.loads(out.read_text())
        assert rep["validation"]["status"] == "passed"
        assert rep["distributed"]["ranks"] == 2
    finally:
        solar_cli("server", "stop")
        shutil.rmtree(top, ignore_errors=True)


def test_jit_example_collectives_are_xlas_kind_by_kind_and_byte_for_byte():
    c = _constants("jax_jit_dp_tp.py")
    b, d, h, dp, tp = c["B"], c["D"], c["H"], c["DP"], c["TP"]
    rep = _analyze(DIST / "jax_jit_dp_tp.py", validate=True)
    _check_complete(rep)
    dist = rep["distributed"]
    assert dist["route"] == "hlo" and dist["mesh"] == {"dp": dp, "tp": tp}
    # The training step's five matmuls (two forward; dH, dW2, dW1 backward) over DP x TP.
    assert rep["totals"]["macs"] == 5 * b * d * h // (dp * tp)
    # Forward: the partial (B/DP) x D output over tp; the loss's partial sum over dp (one
    # f32); backward: each weight's partial gradient, D x H/TP, over dp.
    assert rep["totals"]["comm_bytes_by_kind"] == {
        "all_reduce": b // dp * d * F32 + F32 + 2 * d * h // tp * F32}
    groups = sorted((op["group"], op["comm_bytes"]) for op in rep["ops"]
                    if op["class"] == "collective")
    assert groups == sorted([("tp", b // dp * d * F32), ("dp", F32)]
                            + [("dp", d * h // tp * F32)] * 2)
    assert rep["totals"]["comm_bytes_by_kind"] == _xla_bytes(dist["hlo_collectives"])
    # dp is the outer mesh axis: its all-reduces run over replica groups {0,2} and {1,3}.
    assert rep["validation"]["status"] == "passed", rep["validation"].get("reason")


def _xla_bytes(hlo_collectives, rank=0):
    """XLA's collectives of `rank` by Solar's kind: a collective-permute is a send and a recv
    (for the ranks in its source-target pairs; a pair of a rank with itself moves nothing)."""
    xla: dict = {}
    for coll in hlo_collectives:
        if coll["kind"] == "collective-permute":
            for kind, at in (("send", 0), ("recv", 1)):
                if any(p[at] == rank and p[0] != p[1] for p in coll["pairs"]):
                    xla[kind] = xla.get(kind, 0) + coll["bytes"]
            continue
        kind = coll["kind"].replace("-", "_")
        xla[kind] = xla.get(kind, 0) + coll["bytes"]
    return xla


JIT_MATMUL = """\
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    DEVICES = 4
    M, K, N = 16, 32, 8
    mesh = Mesh(np.array(jax.devices()[:DEVICES]), ("x",))
    forward = jax.jit(lambda a, b: a @ b,
                      in_shardings=(NamedSharding(mesh, A_SPEC), NamedSharding(mesh, B_SPEC)),
                      out_shardings=NamedSharding(mesh, OUT_SPEC))

    def get_inputs():
        rng = np.random.default_rng(0)
        return [rng.standard_normal((M, K), dtype=np.float32),
                rng.standard_normal((K, N), dtype=np.float32)]
    """
M_, K_, N_, DEV_ = 16, 32, 8, 4  # JIT_MATMUL's sizes


@pytest.mark.parametrize("a_spec, b_spec, out_spec, comm", [
    ('P("x", None)', "P()", 'P("x", None)', {}),  # rows split: no communication
    ('P(None, "x")', 'P("x", None)', "P()", {"all_reduce": M_ * N_ * F32}),  # K split: partials
])
def test_an_evenly_sharded_jit_matmul_has_the_global_macs_over_n(tmp_path, a_spec, b_spec,
                                                                  out_spec, comm):
    src = (JIT_MATMUL.replace("A_SPEC", a_spec).replace("B_SPEC", b_spec)
           .replace("OUT_SPEC", out_spec))
    rep = _analyze(_program(tmp_path, src), validate=True)
    _check_complete(rep)
    assert rep["totals"]["macs"] == M_ * K_ * N_ // DEV_
    assert rep["totals"].get("comm_bytes_by_kind", {}) == comm
    assert rep["validation"]["status"] == "passed", rep["validation"].get("reason")


RESHARD = """\
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    DEVICES = 4
    M, N = 16, 8
    mesh = Mesh(np.array(jax.devices()[:DEVICES]), ("x",))
    forward = jax.jit(FN, in_shardings=NamedSharding(mesh, IN_SPEC),
                      out_shardings=NamedSharding(mesh, OUT_SPEC))

    def get_inputs():
        return [np.arange(M * N, dtype=np.float32).reshape(M, N)]
    """
M_R, N_R, DEV_R = 16, 8, 4  # RESHARD's sizes


@pytest.mark.parametrize("fn, in_spec, out_spec, comm", [
    # Row blocks gathered whole: an all-gather of the whole M x N result.
    ("jnp.sin", 'P("x", None)', "P()", {"all_gather": M_R * N_R * F32}),
    # Rows to columns: an all-to-all of the rank's M/4 x N block.
    ("jnp.sin", 'P("x", None)', 'P(None, "x")', {"all_to_all": M_R // DEV_R * N_R * F32}),
    # Reversed rows: each block goes to the mirror rank (rank 0 <-> 3), a collective-permute.
    ("lambda x: x[::-1]", 'P("x", None)', 'P("x", None)',
     {"send": M_R // DEV_R * N_R * F32, "recv": M_R // DEV_R * N_R * F32}),
    # Two results of one shape, the second reversed: the permute goes to the one its
    # op_name names (rev), not to the first that fits.
    ("lambda x: (jnp.sin(x), x[::-1])", 'P("x", None)', 'P("x", None)',
     {"send": M_R // DEV_R * N_R * F32, "recv": M_R // DEV_R * N_R * F32}),
    # A sum over the sharded columns, its result split over rows: this CPU backend
    # all-reduces the whole M-vector and each rank keeps its block (no reduce-scatter).
    ("lambda x: jnp.sum(x, axis=1)", 'P(None, "x")', 'P("x")', {"all_reduce": M_R * F32}),
])
def test_jit_reshards_of_results_are_xlas_collectives(tmp_path, fn, in_spec, out_spec, comm):
    src = RESHARD.replace("FN", fn).replace("IN_SPEC", in_spec).replace("OUT_SPEC", out_spec)
    rep = _analyze(_program(tmp_path, src), validate=True)
    _check_complete(rep)
    assert rep["totals"].get("comm_bytes_by_kind", {}) == comm
    assert comm == _xla_bytes(rep["distributed"]["hlo_collectives"])
    assert rep["validation"]["status"] == "passed", rep["validation"].get("reason")


def test_a_permute_that_keeps_some_blocks_in_place(tmp_path):
    # Rows over ("a", "b") to rows over ("b", "a") on a 2 x 2 mesh: ranks 1 and 2 swap their
    # blocks, ranks 0 and 3 keep theirs (XLA's self-pairs): rank 0 sends nothing.
    src = (RESHARD.replace("FN", "jnp.sin").replace("IN_SPEC", 'P(("a", "b"), None)')
           .replace("OUT_SPEC", 'P(("b", "a"), None)')
           .replace('np.array(jax.devices()[:DEVICES]), ("x",)',
                    'np.array(jax.devices()[:DEVICES]).reshape(2, 2), ("a", "b")'))
    rep = _analyze(_program(tmp_path, src), validate=True)
    _check_complete(rep)
    (perm,) = rep["distributed"]["hlo_collectives"]
    assert sorted(perm["pairs"]) == [[0, 0], [1, 2], [2, 1], [3, 3]]
    assert rep["totals"].get("comm_bytes_by_kind", {}) == {} == _xla_bytes([perm], rank=0)
    assert _xla_bytes([perm], rank=1) == {"send": M_R // DEV_R * N_R * F32,
                                          "recv": M_R // DEV_R * N_R * F32}
    assert rep["validation"]["status"] == "passed", rep["validation"].get("reason")


def test_a_jit_program_xla_reshards_inside_is_refused(tmp_path):
    # jnp.roll over the sharded rows: XLA permutes a boundary row between ranks before the
    # concatenation, inside the program; the rank traced at its local shapes cannot follow.
    src = (RESHARD.replace("FN", "lambda x: jnp.roll(x, 1, axis=0)")
           .replace("IN_SPEC", 'P("x", None)').replace("OUT_SPEC", 'P("x", None)'))
    with pytest.raises(solar.UnsupportedError, match="collective-permute .* reshards no result"):
        _analyze(_program(tmp_path, src))


WSC = """\
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    DEVICES = 2
    mesh = Mesh(np.array(jax.devices()[:DEVICES]), ("x",))

    @jax.jit
    def forward(a, b):  # the contraction split by constraints: partial sums, all-reduced
        a = jax.lax.with_sharding_constraint(a, NamedSharding(mesh, P(None, "x")))
        b = jax.lax.with_sharding_constraint(b, NamedSharding(mesh, P("x", None)))
        return a @ b

    def get_inputs():
        rng = np.random.default_rng(0)
        return [rng.standard_normal((8, 16), dtype=np.float32),
                rng.standard_normal((16, 4), dtype=np.float32)]
    """
EXPLICIT = """\
    import jax
    import numpy as np
    from jax.sharding import AxisType, PartitionSpec as P

    DEVICES = 2
    jax.set_mesh(jax.make_mesh((DEVICES,), ("x",), axis_types=(AxisType.Explicit,)))

    @jax.jit
    def forward(a, b):  # rows resharded over x: no communication
        return jax.reshard(a, P("x", None)) @ b

    def get_inputs():
        rng = np.random.default_rng(0)
        return [rng.standard_normal((8, 16), dtype=np.float32),
                rng.standard_normal((16, 4), dtype=np.float32)]
    """


@pytest.mark.parametrize("src, comm", [(WSC, {"all_reduce": 8 * 4 * F32}), (EXPLICIT, {})])
def test_sharding_constraints_and_explicit_resharding(tmp_path, src, comm):
    rep = _analyze(_program(tmp_path, src), validate=True)
    _check_complete(rep)
    assert rep["totals"]["macs"] == 8 * 16 * 4 // 2  # M * K * N over the 2 devices
    assert rep["totals"].get("comm_bytes_by_kind", {}) == comm
    assert rep["validation"]["status"] == "passed", rep["validation"].get("reason")


def test_every_jax_distributed_example_is_tested_here():
    assert sorted(p.name for p in DIST.glob("jax_*.py")) == [
        "jax_fsdp_step.py", "jax_jit_dp_tp.py", "jax_ring_attention.py", "jax_tp_block.py",
        "jax_tp_mlp.py"]
