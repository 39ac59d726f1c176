"""PyTorch programs that shard themselves (examples/distributed/torch_*.py and small programs
written here): each rank captured under torch.distributed's fake process group, its MACs and
its collectives' bytes equal formulas from the program's constants (docs/distributed.md,
"PyTorch")."""

from __future__ import annotations

import ast
import textwrap

import pytest

from conftest import EXAMPLES

import solar
from solar.programs import ProgramOptions, analyze_file

F32 = 4  # bytes per float32 element
DIST = EXAMPLES / "distributed"


def _constants(name: str):
    """The example's module-level integer constants."""
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


def _analyze(path, validate=False, devices=None, crosscheck_on=False, **kw):
    overrides = {"DEVICES": str(devices)} if devices else {}
    return analyze_file(str(path), ProgramOptions(archs=["H100_SXM"], validate=validate,
                                                  crosscheck=crosscheck_on, cache_aware=False,
                                                  overrides=overrides, **kw)).report


def _check_complete(report):
    assert report["coverage"]["unanalyzed"] == 0, report["coverage"]["unanalyzed_ops"]


@pytest.mark.parametrize("devices", [4, 2])
def test_dp_step_all_reduces_the_gradients(devices):
    c = _constants("torch_dp_allreduce.py")
    b, d, h = c["B"], c["D"], c["H"]
    rep = _analyze(DIST / "torch_dp_allreduce.py", devices=devices)
    _check_complete(rep)
    # x @ w1 and h @ w2 forward, dW2, dh and dW1 backward, on B/N samples.
    assert rep["totals"]["macs"] == 5 * (b // devices) * d * h
    assert rep["totals"]["comm_bytes_by_kind"] == {"all_reduce": 2 * d * h * F32}  # dW1, dW2
    dist = rep["distributed"]
    assert dist["route"] == "torch.distributed" and dist["ranks"] == devices
    # FlopCounterMode is not run on a rank (it would count DTensor ops at global shapes).
    assert _analyze(DIST / "torch_dp_allreduce.py", crosscheck_on=True)["crosscheck"][
        "status"] == "skipped"
    assert dist["groups"] == {"world": {"size": devices, "ranks": list(range(devices))}}


@pytest.mark.parametrize("devices", [4, 2])
def test_dtensor_tp_block_is_the_rank_shard_plus_two_all_reduces(devices):
    c = _constants("torch_tp_block.py")
    s, d, heads, h = c["S"], c["D"], c["HEADS"], c["H"]
    rep = _analyze(DIST / "torch_tp_block.py", devices=devices)
    _check_complete(rep)
    dh, local_heads = d // heads, heads // devices
    projections = 4 * s * d * d // devices  # q, k, v column-parallel, o row-parallel
    # Q K^T and P V over the causal window (s (s + 1) / 2 live pairs), this rank's heads.
    attention = 2 * local_heads * (s * (s + 1) // 2) * dh
    mlp = 2 * s * d * h // devices  # up column-parallel, down row-parallel
    assert rep["totals"]["macs"] == projections + attention + mlp
    # The row-parallel o and down complete their partial sums: two all-reduces of S x D.
    assert rep["totals"]["comm_bytes_by_kind"] == {"all_reduce": 2 * s * d * F32}
    # Each is attributed to the module that issued it (--by module).
    assert sorted(o["module"] for o in rep["ops"] if o["class"] == "collective") == [
        "block.down", "block.o"]


@pytest.mark.parametrize("devices", [4, 2])
def test_fsdp2_step_gathers_weights_and_reduce_scatters_gradients(devices):
    c = _constants("torch_fsdp_step.py")
    b, d, h = c["B"], c["D"], c["H"]
    rep = _analyze(DIST / "torch_fsdp_step.py", devices=devices)
    _check_complete(rep)
    assert rep["totals"]["macs"] == 5 * (b // devices) * d * h
    assert rep["totals"]["comm_bytes_by_kind"] == {
        # Both weights gathered whole in the forward and again in the backward
        # (reshard_after_forward): FSDP2 issues the up projection's backward gather though
        # nothing reads it (no input gradient), so it runs and is counted (an eager op).
        "all_gather": 2 * 2 * d * h * F32,
        "reduce_scatter": 2 * d * h * F32,  # both whole gradients, scattered
    }


@pytest.mark.parametrize("name", ["torch_dp_allreduce.py", "torch_tp_block.py",
                                  "torch_fsdp_step.py"])
def test_examples_validate_against_their_gloo_run_on_two_ranks(name):
    # The program on 2 gloo ranks (processes on 127.0.0.1) against the executor's run of the
    # two ranks' graphs together, on the run's own inputs and parameter shards.
    rep = _analyze(DIST / name, validate=True, devices=2)
    val = rep["validation"]
    assert val["status"] == "passed", val.get("reason")
    assert val["ranks"] == 2 and "gloo" in val["against"]
    assert {o["rank"] for o in val["outputs"]} == {0, 1}


def test_a_rank_that_fails_in_the_gloo_run_is_the_commands_error(tmp_path):
    prog = tmp_path / "fails.py"
    prog.write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist

        DEVICES = 2

        def forward(x):
            if not isinstance(x, torch._subclasses.fake_tensor.FakeTensor) and dist.get_rank():
                raise ValueError("rank 1 gives up")
            return x * 2

        def get_inputs():
            return [torch.randn(4)]
    """))
    with pytest.raises(solar.UserError) as e:
        _analyze(prog, validate=True)
    assert e.value.exit_code == 2
    assert "the gloo run failed" in str(e.value)
    assert "rank 1: ValueError: rank 1 gives up" in str(e.value)


@pytest.mark.parametrize("devices", [4, 2])
def test_torch_jax_and_plan_tp_blocks_agree(tmp_path, devices):
    # "Agree": the transformer block of torch_tp_block.py (DTensor: q, k, v, up
    # ColwiseParallel, o, down RowwiseParallel), the same block written with JAX's shard_map
    # (jax_tp_block.py), and the block captured whole on one rank and sharded by the parallel
    # plan engine's tensor-parallel pass (q, k, v, up column-parallel, o, down row-parallel):
    # equal per-rank MACs, equal collective kinds and bytes.
    pytest.importorskip("jax")
    import json

    from solar.models.shard import WeightRule, shard_graph

    c = _constants("torch_tp_block.py")
    s, d, heads, h = c["S"], c["D"], c["HEADS"], c["H"]
    assert _constants("jax_tp_block.py") == c  # the same block (DEVICES included)
    whole = tmp_path / "block.py"
    whole.write_text(textwrap.dedent(f"""
        import torch
        import torch.nn.functional as F

        S, D, HEADS, H = {s}, {d}, {heads}, {h}

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm1, self.norm2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
                self.q = torch.nn.Linear(D, D, bias=False)
                self.k = torch.nn.Linear(D, D, bias=False)
                self.v = torch.nn.Linear(D, D, bias=False)
                self.o = torch.nn.Linear(D, D, bias=False)
                self.up = torch.nn.Linear(D, H, bias=False)
                self.down = torch.nn.Linear(H, D, bias=False)

            def forward(self, x):
                h = self.norm1(x)
                q, k, v = (p(h).view(S, HEADS, D // HEADS).transpose(0, 1)
                           for p in (self.q, self.k, self.v))
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + self.o(a.transpose(0, 1).reshape(S, D))
                return x + self.down(torch.relu(self.up(self.norm2(x))))

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                return self.block(x)

        def get_inputs():
            return [torch.randn(S, D)]
    """))
    torch_rep = _analyze(DIST / "torch_tp_block.py", devices=devices)
    jax_rep = _analyze(DIST / "jax_tp_block.py", devices=devices)
    captured = analyze_file(str(whole), ProgramOptions(archs=["H100_SXM"], cache_aware=False))
    _check_complete(captured.report)
    # torch.nn.Linear's weight is [out, in]: column-parallel splits dim 0 (q, k, v: whole
    # heads, as D / HEADS divides D / N), row-parallel dim 1.
    rules = {f"block.{n}.weight": WeightRule("column", 0) for n in ("q", "k", "v", "up")}
    rules.update({f"block.{n}.weight": WeightRule("row", 1) for n in ("o", "down")})
    plan = shard_graph(json.loads(captured.graph.to_json()), devices, 0, rules)
    assert plan.replicated_ops == []
    shapes = {t["name"]: t["shape"] for t in plan.graph["tensors"]}
    assert shapes["block.q.weight"] == [d // devices, d]  # HEADS / N heads of D / HEADS
    plan_rep = solar.analyze(solar.parse_graph_json(json.dumps(plan.graph)), ["H100_SXM"])
    assert plan_rep.coverage["unanalyzed"] == 0
    for rep in (torch_rep, jax_rep):
        _check_complete(rep)
    projections = 4 * s * d * d // devices  # q, k, v column-parallel, o row-parallel
    # Q K^T and P V over the causal triangle (S (S + 1) / 2 live pairs), HEADS / N heads.
    attention = 2 * (heads // devices) * (d // heads) * (s * (s + 1) // 2)
    mlp = 2 * s * d * h // devices  # up column-parallel, down row-parallel
    macs = {int(torch_rep["totals"]["macs"]), int(jax_rep["totals"]["macs"]),
            int(plan_rep.totals.macs)}
    assert macs == {projections + attention + mlp}
    comm = [torch_rep["totals"]["comm_bytes_by_kind"], jax_rep["totals"]["comm_bytes_by_kind"],
            {k: int(v) for k, v in plan_rep.totals.comm_bytes_by_kind.items()}]
    # The row-parallel o and down complete their partial sums: two all-reduces of S x D.
    assert comm == [{"all_reduce": 2 * s * d * F32}] * 3


def test_on_a_system_ranks_fill_the_scale_up_domains_in_order(tmp_path):
    # A 2 x 2 mesh on two nodes of 2 GPUs: "tp" (ranks 0, 1) inside a node, "dp" (ranks 0, 2)
    # across the nodes.
    prog = tmp_path / "mesh2d.py"
    prog.write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh

        DEVICES = 4
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))

        def forward(x):
            y = x * 2
            dist.all_reduce(y, group=mesh.get_group("tp"))
            dist.all_reduce(y, group=mesh.get_group("dp"))
            return y

        def get_inputs():
            return [torch.randn(8, 16)]
    """))
    rep = _analyze(prog, system="2xH100_SXM", nodes=2)
    _check_complete(rep)
    dist = rep["distributed"]
    assert dist["groups"] == {"tp": {"size": 2, "ranks": [0, 1]},
                              "dp": {"size": 2, "ranks": [0, 2]}}
    assert dist["group_links"] == {"tp": "scale-up", "dp": "scale-out"}
    assert dist["devices_per_domain"] == 2
    with pytest.raises(solar.UserError, match="do not fit"):
        _analyze(prog, system="2xH100_SXM")  # 4 ranks on 2 devices
    # The dp groups {0, 2} and {1, 3} are no blocks of consecutive ranks: each rank's
    # all-reduce lists its group's ranks, which the executor runs.
    val = _analyze(prog, validate=True)["validation"]
    assert val["status"] == "passed", val.get("reason")
    assert {o["rank"] for o in val["outputs"]} == {0, 1, 2, 3}


def test_data_dependent_control_flow_is_refused(tmp_path):
    prog = tmp_path / "branch.py"
    prog.write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist

        DEVICES = 2

        def forward(x):
            dist.all_reduce(x)
            if x.sum() > 0:  # decided by the all-reduced values
                return x * 2
            return x

        def get_inputs():
            return [torch.randn(4)]
    """))
    with pytest.raises(solar.UnsupportedError, match="reads tensor values") as e:
        _analyze(prog)
    assert e.value.exit_code == 7


def test_every_c10d_collective_lowers_and_validates_on_gloo(tmp_path):
    # dist.broadcast, all_to_all_single (whose output the schema does not mark written),
    # all_gather_into_tensor, reduce_scatter_tensor and all_reduce(MAX), on 2 ranks with
    # different inputs: bytes by formula, and the executor's ranks equal gloo's.
    prog = tmp_path / "collectives.py"
    prog.write_text(textwrap.dedent('''import torch
import torch.distributed as dist

DEVICES = 2
M, N = 4, 6


def forward(x):
    b = x.clone()
    dist.broadcast(b, src=1)
    a = torch.empty_like(x)
    dist.all_to_all_single(a, x * 2)
    g = torch.empty(DEVICES * M, N)
    dist.all_gather_into_tensor(g, a + b)
    r = torch.empty(M // DEVICES, N)
    dist.reduce_scatter_tensor(r, g[:M].contiguous())
    dist.all_reduce(r, op=dist.ReduceOp.MAX)
    return b, a, g, r


def get_inputs():
    return [torch.randn(M, N, generator=torch.Generator().manual_seed(dist.get_rank()))]
'''))
    rep = _analyze(prog, validate=True)
    _check_complete(rep)
    m, n, world = 4, 6, 2
    assert rep["totals"]["comm_bytes_by_kind"] == {
        "broadcast": m * n * F32, "all_to_all": m * n * F32,
        "all_gather": world * m * n * F32,  # the gathered output
        "reduce_scatter": m * n * F32,  # the whole input
        "all_reduce": (m // world) * n * F32}
    assert rep["validation"]["status"] == "passed", rep["validation"].get("reason")


def test_a_list_collective_is_refused_with_the_reason(tmp_path):
    prog = tmp_path / "gather_list.py"
    prog.write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist

        DEVICES = 2

        def forward(x):
            parts = [torch.empty_like(x) for _ in range(DEVICES)]
            dist.all_gather(parts, x)
            return torch.cat(parts)

        def get_inputs():
            return [torch.randn(4, 8)]
    """))
    with pytest.raises(solar.UnsupportedError) as e:  # its writes would be read stale
        _analyze(prog)
    assert e.value.exit_code == 7
    assert "c10d::allgather_" in str(e.value) and "not supported" in str(e.value)
    assert "gather_list.py:9" in str(e.value)  # the program's line


def test_functional_collectives_lower_with_their_group_sizes(tmp_path):
    prog = tmp_path / "functional.py"
    prog.write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist
        import torch.distributed._functional_collectives as fc

        DEVICES = 4
        M, N = 8, 16

        def forward(x):
            g = fc.all_gather_tensor(x, 0, dist.group.WORLD)      # [4M, N]
            r = fc.reduce_scatter_tensor(g, "sum", 0, dist.group.WORLD)  # [M, N]
            return fc.all_reduce(r, "max", dist.group.WORLD) + 1

        def get_inputs():
            return [torch.randn(M, N)]
    """))
    rep = _analyze(prog)
    _check_complete(rep)
    m, n, world = 8, 16, 4
    # all_gather and reduce_scatter move the gathered [world M, N]; all_reduce its [M, N].
    assert rep["totals"]["comm_bytes_by_kind"] == {
        "all_gather": world * m * n * F32, "reduce_scatter": world * m * n * F32,
        "all_reduce": m * n * F32}
