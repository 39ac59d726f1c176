"""The loop-language examples (examples/loops/*.py) against their PyTorch twins
(examples/loops/*_torch.py).

Each loop program and its twin compute the same thing, so Solar must count the same work
and traffic for both: MACs, vector FLOPs, special ops and compulsory (fused) bytes, each at
the example's own sizes. The loop programs are written as the decompositions Solar's aten
lowering uses for the twins' ops (src/lower/aten.cc: softmax_into, lower_layer_norm,
lower_sdpa, lower_linear, lower_convolution), which is what makes the vector FLOPs agree.
The expected MACs (and vector FLOPs and special ops where there are any) are also written
here as formulas over the program's own constants (docs/cost.md: one FLOP per combine node
per live point, a reduction of n points into m outputs n - m).

Two examples differ from their twins where the loop form knows more:
- padded convolutions (conv2d, depthwise_conv): the padding is an `if` guard, so the loop
  program counts only the taps inside the input, while the twin's graph counts every tap
  (padding reads a pad value). The loop's MACs are compared with a formula for the in-bounds
  taps, and the loop contraction's unmasked box (the product of its index extents) with the
  twin's MACs;
- sparse_linear: its weight is declared 2:4 sparse, the twin's is a dense tensor that happens
  to hold the pattern. Both count the dense MACs, but all of the loop's are 2:4-eligible
  (`macs_2_4`) and none of the twin's, and the loop reads the weight in the compressed format
  (docs/cost.md, "Bytes").

Finally every example validates against its twin: the loop program's interpreter, the lifted
graph (Solar's executor) and PyTorch, on the same inputs at shrunk sizes.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from solar import loopir  # noqa: E402
from solar.frontends.loopir import program as loop_program  # noqa: E402
from solar.frontends.loopir import validation as loop_validation  # noqa: E402
from solar.frontends.torch.capture import load_program  # noqa: E402
from solar.programs import ProgramOptions, analyze_file  # noqa: E402

torch.set_num_threads(2)

LOOPS = Path(__file__).resolve().parents[2] / "examples" / "loops"

EXAMPLES = ["gemm", "conv2d", "depthwise_conv", "causal_attention", "layernorm", "softmax",
            "mla", "sparse_linear", "robot_mlp"]

# The counts compared between a loop program and its twin (report totals, docs/report-json.md).
COUNTS = ["macs", "vector_flops", "special_ops", "bytes_fused"]

# Where the loop program legitimately differs from its twin (see the module docstring).
MASK_AWARE = {"conv2d", "depthwise_conv"}  # padding guards: the loop counts in-bounds taps
SPARSE_2_4 = {"sparse_linear"}  # a 2:4 weight: compressed bytes, 2:4-eligible MACs

# Shrunk sizes for validation (the interpreter evaluates every loop point with NumPy).
VALIDATE_AT = {
    "gemm": {"M": 16, "N": 32, "K": 24},
    "conv2d": {"N": 1, "C": 8, "K": 8, "G": 2, "H": 9, "W": 10},
    "depthwise_conv": {"N": 2, "C": 8, "H": 12, "W": 10},
    "causal_attention": {"H": 2, "S": 32, "D": 16},
    "layernorm": {"B": 2, "S": 16, "D": 64},
    "softmax": {"R": 64, "C": 128},
    "mla": {"S": 16, "DM": 64, "DC": 16, "H": 2, "DH": 8},
    "sparse_linear": {"M": 16, "K": 64, "N": 32},
    "robot_mlp": {},  # batch 1: already small
}


def loop_path(name: str) -> str:
    return str(LOOPS / f"{name}.py")


def twin_path(name: str) -> str:
    return str(LOOPS / f"{name}_torch.py")


@functools.cache
def constants(name: str) -> dict:
    """The loop program's module-level constants (sizes), as it declares them."""
    return dict(loop_program.load(loop_path(name)).program.constants)


@functools.cache
def loop_totals(name: str) -> dict:
    return loopir.analyze(loop_path(name), cache_aware=False).to_dict()["totals"]


@functools.cache
def twin_totals(name: str) -> dict:
    opts = ProgramOptions(crosscheck=False, cache_aware=False)
    return analyze_file(twin_path(name), opts).report.to_dict()["totals"]


# ---------------------------------------------------------------- formulas


def taps_inside(size: int, out: int, taps: int, stride: int, pad: int, dil: int) -> int:
    """(output position, tap) pairs of one spatial dimension whose input position
    stride*o + dil*r - pad lies inside [0, size): what a padding guard keeps."""
    return sum(1 for o in range(out) for r in range(taps) if 0 <= stride * o + dil * r - pad < size)


def macs_formula(name: str, c: dict) -> int:
    """The loop program's MACs (mask-aware: a padded convolution counts in-bounds taps)."""
    if name == "gemm":
        return c["M"] * c["N"] * c["K"]
    if name == "conv2d":
        # per output channel: CG input channels x the in-bounds taps of each dimension
        th = taps_inside(c["H"], c["OH"], c["KH"], c["STRIDE"], c["PAD"], c["DIL"])
        tw = taps_inside(c["W"], c["OW"], c["KW"], c["STRIDE"], c["PAD"], c["DIL"])
        return c["N"] * c["K"] * c["CG"] * th * tw
    if name == "depthwise_conv":
        # 3 taps, padding 1, stride 1: each border row (column) loses one tap: 3H - 2
        return c["N"] * c["C"] * (3 * c["H"] - 2) * (3 * c["W"] - 2)
    if name == "causal_attention":
        # Q K^T and P V over the S(S+1)/2 live (query, key) pairs of each head
        return 2 * c["B"] * c["H"] * c["S"] * (c["S"] + 1) // 2 * c["D"]
    if name in ("layernorm", "softmax"):
        return 0
    if name == "mla":
        B, S, DM, DC, H, DH = (c[k] for k in ("B", "S", "DM", "DC", "H", "DH"))
        return (B * S * DM * DC  # x -> latent
                + 2 * B * S * DC * H * DH  # latent -> keys, values
                + B * S * DM * H * DH  # x -> queries
                + B * H * S * S * DH)  # q . k per head
    if name == "sparse_linear":
        return c["M"] * c["N"] * c["K"]  # dense count: 2:4 only marks them (macs_2_4)
    if name == "robot_mlp":
        return c["BATCH"] * (c["OBS"] * c["HID"] + c["L"] * c["HID"] ** 2 + c["HID"] * c["ACT"])
    raise KeyError(name)


def twin_macs_formula(name: str, c: dict) -> int:
    """The twin's MACs: equal to the loop's except for padded convolutions (every tap)."""
    if name == "conv2d":
        return c["N"] * c["K"] * c["OH"] * c["OW"] * c["CG"] * c["KH"] * c["KW"]
    if name == "depthwise_conv":
        return c["N"] * c["C"] * c["H"] * c["W"] * c["KH"] * c["KW"]
    return macs_formula(name, c)


def vector_formula(name: str, c: dict) -> tuple[int, int]:
    """(vector FLOPs, special ops) of the loop program, which the twin's lowering matches."""
    if name == "conv2d":
        return c["N"] * c["K"] * c["OH"] * c["OW"], 0  # the bias add
    if name == "causal_attention":
        live = c["S"] * (c["S"] + 1) // 2  # (query, key) pairs per head
        # scale: live; row max: live - S; exp(x - max): live subs (+ live exps);
        # row sum: live - S; division: live
        return c["B"] * c["H"] * (5 * live - 2 * c["S"]), c["B"] * c["H"] * live
    if name == "layernorm":
        D = c["D"]
        # sum D-1, mean 1, centre D, sum of squares 2D-1, rsqrt(ss/D + eps) 2, y 3D
        per_row = (D - 1) + 1 + D + (2 * D - 1) + 2 + 3 * D
        return c["B"] * c["S"] * per_row, c["B"] * c["S"]
    if name == "softmax":
        C = c["C"]
        # max C-1, exp(x - max) C subs (+ C exps), sum C-1, division C
        return c["R"] * ((C - 1) + C + (C - 1) + C), c["R"] * C
    if name == "sparse_linear":
        return c["M"] * c["N"], 0  # the bias add
    if name == "robot_mlp":
        # bias add + relu per hidden output; bias add (+ tanh) per action
        return 2 * c["BATCH"] * c["HID"] * (1 + c["L"]) + c["BATCH"] * c["ACT"], \
            c["BATCH"] * c["ACT"]
    return 0, 0  # gemm, depthwise_conv, mla: contractions only


def compressed_2_4_bytes(n: int, bits: int) -> int:
    """docs/cost.md: half the values plus a 2-bit index per kept value."""
    return math.ceil(math.ceil(n / 2) * (bits + 2) / 8)


def contraction_box(name: str) -> int:
    """The product of the index extents of the loop program's (single) contraction: its
    iteration box with no mask applied."""
    graph = json.loads(loopir.lift(loop_path(name)).to_json())
    boxes = [math.prod(i["extent"] for i in op["indices"]) for op in graph["ops"]
             if op["kind"] == "einsum" and op.get("reduce") == "sum"
             and op.get("combine") == "mul($0,$1)"]
    assert len(boxes) == 1, boxes
    return boxes[0]


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("name", EXAMPLES)
def test_twin_takes_every_loop_tensor(name):
    """The twin's forward takes every input and weight of the loop program, by name, in
    declaration order."""
    lp = loop_program.load(loop_path(name))
    sources = [t["name"] for t in loop_validation.source_tensors(lp.trace)]
    model_cls = load_program(twin_path(name), {}).Model
    assert list(inspect.signature(model_cls.forward).parameters)[1:] == sources


@pytest.mark.parametrize("name", EXAMPLES)
def test_macs_match_formula(name):
    c = constants(name)
    assert loop_totals(name)["macs"] == macs_formula(name, c)
    assert twin_totals(name)["macs"] == twin_macs_formula(name, c)


@pytest.mark.parametrize("name", EXAMPLES)
def test_vector_work_matches_formula(name):
    vector, special = vector_formula(name, constants(name))
    for totals in (loop_totals(name), twin_totals(name)):
        assert (totals["vector_flops"], totals["special_ops"]) == (vector, special)


@pytest.mark.parametrize("name", EXAMPLES)
def test_counts_equal_twin(name):
    loop, twin = loop_totals(name), twin_totals(name)
    same = [k for k in COUNTS
            if not (k == "macs" and name in MASK_AWARE)
            and not (k == "bytes_fused" and name in SPARSE_2_4)]
    assert {k: loop[k] for k in same} == {k: twin[k] for k in same}
    assert loop["vector_flops_by_dtype"] == twin["vector_flops_by_dtype"]
    if name not in MASK_AWARE:
        assert loop["macs_by_dtype"] == twin["macs_by_dtype"]
    if name not in SPARSE_2_4:
        assert loop["macs_2_4"] == twin["macs_2_4"] == 0
        assert loop["bytes_fused_read"] == twin["bytes_fused_read"]


@pytest.mark.parametrize("name", sorted(MASK_AWARE))
def test_padded_convolution_box_equals_twin(name):
    """The guard skips the padding taps: the loop's MACs are fewer than the twin's, whose
    count (every tap) is the loop contraction's unmasked box."""
    loop, twin = loop_totals(name), twin_totals(name)
    assert contraction_box(name) == twin["macs"]
    assert loop["macs"] < twin["macs"]


def test_sparse_linear_2_4():
    c = constants("sparse_linear")
    loop, twin = loop_totals("sparse_linear"), twin_totals("sparse_linear")
    assert loop["macs_2_4"] == loop["macs"] == c["M"] * c["N"] * c["K"]
    assert twin["macs_2_4"] == 0  # the twin does not know its weight is sparse
    n = c["N"] * c["K"]  # W, bf16
    assert twin["bytes_fused"] - loop["bytes_fused"] == 2 * n - compressed_2_4_bytes(n, 16)
    assert compressed_2_4_bytes(n, 16) == n * 9 // 8  # 16 + 2 bits per kept half


@pytest.mark.parametrize("name", EXAMPLES)
def test_validates_against_twin(name):
    v = loopir.validate(loop_path(name), reference=twin_path(name), set=VALIDATE_AT[name])
    assert v["status"] == "passed", v
    assert all(o["passed"] for o in v["outputs"]), v["outputs"]
    ref = v["reference"]
    assert ref["status"] == "passed"
    assert len(ref["outputs"]) == len(v["outputs"]) >= 1
    for out in ref["outputs"]:
        assert out["loop_program"]["passed"] and out["graph"]["passed"], out


def test_robot_mlp_unsaturated():
    """Validation draws standard-normal weights, which saturate robot_mlp's tanh; with
    fan-in-scaled weights (as the twin's get_inputs draws them) the loop interpreter must
    still agree with the twin."""
    mod = load_program(twin_path("robot_mlp"), {})
    torch.manual_seed(0)
    inputs = mod.get_inputs()
    names = list(inspect.signature(mod.Model.forward).parameters)[1:]
    got = loopir.run(loop_path("robot_mlp"),
                     inputs={n: t.numpy().astype(np.float64) for n, t in zip(names, inputs)})
    with torch.no_grad():
        want = mod.Model()(*inputs).numpy()
    assert np.abs(want).max() < 0.999  # not saturated
    np.testing.assert_allclose(got["action"], want, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- recurrences
#
# cumsum, selective_scan and lstm read what they write one step before (docs/loop-language.md,
# "Recurrences"): each is lifted to one repeat op whose body is one step, so the work is linear
# in the steps. Their twins are captured step by step (a cumsum kernel, a Python loop over the
# sequence, torch.lstm's per-step decomposition), so the counts agree up to these boundary
# terms:
# - cumsum: torch.cumsum adds each row's first element to 0 (B N adds), the recurrence starts
#   from y[b, 0] = x[b, 0] (B (N - 1) adds). Its fused bytes read one column less: the first
#   column is read by the copy nest and the rest by the repeat, and a source's compulsory read
#   is its largest reader's (docs/cost.md, "Compulsory traffic"), so x counts B (N - 1) values;
# - lstm: the twin's in-place gate activations (sigmoid_, tanh_ on a slice) compute i64
#   scatter offsets, 4 B H per step, which the loop program has no use for.

RECURRENCES = ["cumsum", "selective_scan", "lstm"]

RECURRENCE_VALIDATE_AT = {
    "cumsum": {"B": 4, "N": 64},
    "selective_scan": {"L": 16, "D": 8, "N": 4},
    "lstm": {"T": 6, "B": 2, "I": 8, "H": 8},
}


def recurrence_formula(name: str, c: dict) -> dict:
    """The loop program's work, linear in its steps."""
    if name == "cumsum":
        return {"macs": 0, "vector_flops": c["B"] * (c["N"] - 1), "special_ops": 0,
                "trips": c["N"] - 1}
    if name == "selective_scan":
        points = c["B"] * c["L"] * c["D"] * c["N"]
        # per state element and step: delta*A, * h, delta*B, * u, + (and one exp); then the
        # contraction with C
        return {"macs": points, "vector_flops": 5 * points, "special_ops": points,
                "trips": c["L"]}
    if name == "lstm":
        T, B, I, H = (c[k] for k in ("T", "B", "I", "H"))
        # per step: the hidden projection (4H x H per row), 4 gate sums, 3 sigmoids' adds,
        # 3 for c, 1 for h, 3 sigmoids (exp, recip) and 2 tanh; the input projection and
        # both biases (2 adds per gate value) over every step at once
        return {"macs": 4 * T * B * H * (I + H), "vector_flops": T * B * H * (11 + 8),
                "special_ops": T * B * H * (3 * 2 + 2), "trips": T}
    raise KeyError(name)


def twin_recurrence_formula(name: str, c: dict) -> dict:
    """The twin's counts: the loop program's, with the boundary terms above."""
    out = dict(recurrence_formula(name, c))
    del out["trips"]
    if name == "cumsum":
        out["vector_flops"] = c["B"] * c["N"]
    if name == "lstm":
        out["vector_flops"] += 4 * c["T"] * c["B"] * c["H"]  # i64 scatter offsets
    return out


def repeat_trips(name: str) -> list:
    graph = json.loads(loopir.lift(loop_path(name)).to_json())
    return [op["trips"] for op in graph["ops"] if op["kind"] == "repeat"]


@pytest.mark.parametrize("name", RECURRENCES)
def test_recurrence_twin_takes_every_loop_tensor(name):
    test_twin_takes_every_loop_tensor(name)


@pytest.mark.parametrize("name", RECURRENCES)
def test_recurrence_is_one_repeat_with_linear_work(name):
    c = constants(name)
    want = recurrence_formula(name, c)
    assert repeat_trips(name) == [want.pop("trips")]
    got = loop_totals(name)
    assert {k: got[k] for k in want} == want


@pytest.mark.parametrize("name", RECURRENCES)
def test_recurrence_equals_twin_up_to_boundary_terms(name):
    c = constants(name)
    loop, twin = loop_totals(name), twin_totals(name)
    want = twin_recurrence_formula(name, c)
    assert {k: twin[k] for k in want} == want
    assert loop["macs_by_dtype"] == twin["macs_by_dtype"]
    if name == "cumsum":  # x's first column: see the section's comment
        assert twin["bytes_fused"] - loop["bytes_fused"] == 4 * c["B"]  # f32
    else:
        assert loop["bytes_fused"] == twin["bytes_fused"]
    if name == "lstm":  # the twin's scatter offsets: see the section's comment
        assert twin["vector_flops_by_dtype"] == {"f32": loop["vector_flops"],
                                                 "i64": 4 * c["T"] * c["B"] * c["H"]}
    elif name == "selective_scan":
        assert loop["vector_flops_by_dtype"] == twin["vector_flops_by_dtype"]


@pytest.mark.parametrize("name", RECURRENCES)
def test_recurrence_validates_against_twin(name):
    v = loopir.validate(loop_path(name), reference=twin_path(name),
                        set=RECURRENCE_VALIDATE_AT[name])
    assert v["status"] == "passed", v
    ref = v["reference"]
    assert ref["status"] == "passed"
    for out in ref["outputs"]:
        assert out["loop_program"]["passed"] and out["graph"]["passed"], out


def test_cumsum_is_linear_not_triangular():
    """Written as a triangular reduction (`for j in range(i + 1): y[b, i] += x[b, j]`), the
    prefix sum reduces N (N + 1) / 2 points into N outputs per row: B N (N - 1) / 2 adds; the
    recurrence counts B (N - 1), N / 2 = 4,096 times fewer at N = 8192."""
    c = constants("cumsum")
    triangular = c["B"] * c["N"] * (c["N"] - 1) // 2
    assert loop_totals("cumsum")["vector_flops"] * (c["N"] // 2) == triangular
