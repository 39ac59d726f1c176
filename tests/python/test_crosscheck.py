"""The FlopCounterMode cross-check (section `crosscheck`, docs/validation.md): Solar's MACs per
aten op beside torch.utils.flop_counter.FlopCounterMode's, stacked under the recorder in the
same capture. Real PyTorch programs on fake tensors (cheap), no mocks."""

from __future__ import annotations

import json
import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")

from conftest import EXAMPLES  # noqa: E402

from solar.frontends.torch import crosscheck  # noqa: E402
from solar.frontends.torch.capture import CaptureRecord, capture_program  # noqa: E402
from solar.programs import ProgramOptions, analyze_file, analyze_trace  # noqa: E402

TORCH = EXAMPLES / "torch"


def write(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def check(path, **kw):
    return analyze_file(str(path), ProgramOptions(**kw)).crosscheck


def op_entry(c, op):
    return next(e for e in c["per_op"] if e["op"] == op)


def test_mlp_agrees():
    B, I, H, O = 2, 1024, 4096, 1024
    c = check(TORCH / "mlp.py", overrides={"batch_size": "2"})
    assert c["tool"] == "torch.utils.flop_counter.FlopCounterMode"
    assert c["unit"] == "MAC (1 MAC = 2 FLOP)"
    assert c["status"] == "agree"
    e = op_entry(c, "aten::addmm.default")
    assert e["agree"] and e["solar_macs"] == e["counter_macs"] == B * I * H + B * H * O
    assert c["solar_macs"] == c["counter_macs"] == B * I * H + B * H * O


def test_conv_block_agrees():
    N, C, HW, G = 1, 64, 56, 4
    c = check(TORCH / "conv_block.py", overrides={"batch_size": "1"})
    assert c["status"] == "agree"
    # conv1 N*K*P*Q*C*R*S + grouped conv2 N*K*P*Q*(C/G)*R*S (padded taps counted by both)
    expect = N * C * HW * HW * C * 9 + N * C * HW * HW * (C // G) * 9
    assert op_entry(c, "aten::convolution.default")["counter_macs"] == expect
    assert op_entry(c, "aten::convolution.default")["solar_macs"] == expect


def test_causal_attention_is_explained():
    B, T, D, H = 4, 64, 1024, 16
    dh = D // H
    c = check(TORCH / "attention.py", overrides={"seq_len": "64"})
    assert c["status"] == "explained"
    e = op_entry(c, "aten::_scaled_dot_product_flash_attention_for_cpu.default")
    assert e["agree"] is False and e["explained"] is True
    assert "causal" in e["note"]
    assert e["counter_macs"] == 2 * B * H * T * T * dh  # QK^T and PV over every pair
    assert e["solar_macs"] == 2 * B * H * (T * (T + 1) // 2) * dh  # the causal triangle only
    assert op_entry(c, "aten::mm.default")["agree"] is True


SDPA = """
    import torch
    import torch.nn.functional as F

    B, H, L, S, E = 2, 4, 12, 12, 8
    causal = False

    class Model(torch.nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def get_inputs():
        return [torch.randn(B, H, L, E), torch.randn(B, H, S, E), torch.randn(B, H, S, E)]

    def get_init_inputs():
        return []
"""


def test_plain_sdpa_agrees_and_causal_is_explained(tmp_path):
    B, H, L, S, E = 2, 4, 12, 12, 8
    path = write(tmp_path, "sdpa.py", SDPA)
    op = "aten::_scaled_dot_product_flash_attention_for_cpu.default"
    plain = check(path)
    assert plain["status"] == "agree"
    assert op_entry(plain, op)["solar_macs"] == 2 * B * H * L * S * E  # QK^T + PV
    causal = check(path, overrides={"causal": "True"})
    assert causal["status"] == "explained"
    assert op_entry(causal, op)["solar_macs"] == 2 * B * H * (L * (L + 1) // 2) * E


def test_transposed_conv_with_padding_is_explained_exactly(tmp_path):
    N, Cin, Cout, I, K, s, p = 2, 4, 6, 5, 3, 2, 1
    path = write(tmp_path, "convt.py", f"""
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.up = torch.nn.ConvTranspose2d({Cin}, {Cout}, {K}, stride={s}, padding={p})

            def forward(self, x):
                return self.up(x)

        def get_inputs():
            return [torch.randn({N}, {Cin}, {I}, {I})]

        def get_init_inputs():
            return []
    """)
    c = check(path)
    assert c["status"] == "explained"
    e = op_entry(c, "aten::convolution.default")
    assert e["counter_macs"] == N * Cin * Cout * I * I * K * K  # every input position x tap
    O = (I - 1) * s - 2 * p + K
    per_dim = sum(1 for i in range(I) for r in range(K) if 0 <= i * s + r - p < O)
    assert e["solar_macs"] == N * Cin * Cout * per_dim * per_dim  # taps inside the output
    assert "padding crops" in e["note"]
    # training: the weight gradient pairs the same (input position, tap) taps as the forward
    t = check(path, train=True)
    assert t["status"] == "explained"
    b = op_entry(t, "aten::convolution_backward.default")
    assert b["counter_macs"] == N * Cin * Cout * I * I * K * K
    assert b["solar_macs"] == N * Cin * Cout * per_dim * per_dim and b["explained"]


def test_padded_conv_training_keeps_the_forward_convention(tmp_path):
    # Two padded convolutions trained: the first needs only its weight gradient, which pairs
    # every output position with every tap, padded ones too, as the forward and the counter
    # do; the second also needs its input gradient, where the counter counts the taps that
    # padding crops (explained, corrected exactly).
    N, C0, C1, C2, I, K = 2, 3, 4, 5, 8, 3
    path = write(tmp_path, "pconv.py", f"""
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Conv2d({C0}, {C1}, {K}, padding=1)
                self.b = torch.nn.Conv2d({C1}, {C2}, {K}, padding=2, stride=2)

            def forward(self, x):
                return self.b(self.a(x))

        def get_inputs():
            return [torch.randn({N}, {C0}, {I}, {I})]

        def get_init_inputs():
            return []
    """)
    t = check(path, train=True)
    assert t["status"] == "explained"
    O = (I + 2 * 2 - K) // 2 + 1  # the second convolution's output size
    kept = sum(1 for o in range(O) for r in range(K) if 0 <= o * 2 + r - 2 < I)
    b = op_entry(t, "aten::convolution_backward.default")
    weight_grads = N * C1 * C0 * I * I * K * K + N * C2 * C1 * O * O * K * K
    assert b["solar_macs"] == weight_grads + N * C2 * C1 * kept * kept  # + input gradient
    assert b["counter_macs"] == weight_grads + N * C2 * C1 * O * O * K * K
    assert "padding crops" in b["note"]


def test_transposed_conv_without_padding_agrees(tmp_path):
    path = write(tmp_path, "convt0.py", """
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.up = torch.nn.ConvTranspose1d(3, 5, 4, stride=2)

            def forward(self, x):
                return self.up(x)

        def get_inputs():
            return [torch.randn(2, 3, 7)]

        def get_init_inputs():
            return []
    """)
    c = check(path)
    assert c["status"] == "agree"
    assert op_entry(c, "aten::convolution.default")["solar_macs"] == 2 * 3 * 5 * 7 * 4


def test_bmm_baddbmm_and_train_step_agree(tmp_path):
    B, M, K, N = 3, 5, 7, 4
    path = write(tmp_path, "bmm.py", f"""
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.randn({B}, {K}, {N}))
                self.b = torch.nn.Parameter(torch.randn({B}, {M}, {N}))

            def forward(self, x):
                return torch.baddbmm(self.b, x, self.w).relu() + torch.bmm(x, self.w)

        def get_inputs():
            return [torch.randn({B}, {M}, {K})]

        def get_init_inputs():
            return []
    """)
    c = check(path)
    assert c["status"] == "agree"
    assert op_entry(c, "aten::baddbmm.default")["solar_macs"] == B * M * K * N
    assert op_entry(c, "aten::bmm.default")["solar_macs"] == B * M * K * N
    # the training step: the backward's bmm are counted by both too
    t = check(path, train=True)
    assert t["status"] == "agree"
    assert t["counter_macs"] > c["counter_macs"]


def test_planted_count_difference_is_differ_with_a_warning(tmp_path):
    """compare() over a real capture whose counter count for one mm is planted wrong."""
    path = write(tmp_path, "mm.py", """
        import torch

        class Model(torch.nn.Module):
            def forward(self, a, b):
                return torch.mm(a, b)

        def get_inputs():
            return [torch.randn(4, 6), torch.randn(6, 5)]

        def get_init_inputs():
            return []
    """)
    record = CaptureRecord(flop_counter=True)
    trace = capture_program(path, record=record)
    result = analyze_trace(trace, path, ProgramOptions())
    report = json.loads(result.report.to_json())
    (i,) = record.counter_flops  # the one mm
    assert record.counter_flops[i] == 2 * 4 * 6 * 5  # FLOPs = 2 * M * K * N
    assert crosscheck.compare(trace, report, record)["status"] == "agree"
    record.counter_flops[i] += 2  # one MAC too many
    with pytest.warns(RuntimeWarning, match="differ from FlopCounterMode"):
        c = crosscheck.compare(trace, report, record)
    assert c["status"] == "differ"
    e = op_entry(c, "aten::mm.default")
    assert e["agree"] is False and not e["explained"]
    assert "no known FlopCounterMode error" in e["note"]


def test_ops_without_a_counter_formula_are_not_compared(tmp_path):
    path = write(tmp_path, "mv.py", """
        import torch

        class Model(torch.nn.Module):
            def forward(self, a, x):
                return torch.mv(a, x)

        def get_inputs():
            return [torch.randn(4, 6), torch.randn(6)]

        def get_init_inputs():
            return []
    """)
    c = check(path)
    e = op_entry(c, "aten::mv.default")
    assert e["agree"] is None and e["counter_macs"] is None and "no formula" in e["note"]
    assert e["solar_macs"] == 4 * 6
    assert c["status"] == "not_compared" and c["compared_ops"] == 0  # nothing checked


def test_cli_json_has_the_section_and_no_crosscheck_drops_it(tmp_path, capsys):
    from solar import cli

    path = write(tmp_path, "sdpa.py", SDPA)
    out = tmp_path / "r.json"
    assert cli.main(["solar", "analyze", path, "--set", "causal=True", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["crosscheck"]["status"] == "explained"
    assert "Cross-check with FlopCounterMode: explained" in capsys.readouterr().out
    assert cli.main(["solar", "analyze", path, "--no-crosscheck", "--json", "-"]) == 0
    assert "crosscheck" not in json.loads(capsys.readouterr().out)


def test_the_counter_does_not_change_the_trace(tmp_path):
    """Stacked under the recorder, FlopCounterMode sees the recorded ops and changes none."""
    path = str(TORCH / "attention.py")
    sets = {"seq_len": "16", "batch_size": "1"}
    plain = capture_program(path, sets)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning from the counter either
        counted = capture_program(path, sets, record=CaptureRecord(flop_counter=True))
    assert [o["op"] for o in plain["ops"]] == [o["op"] for o in counted["ops"]]
    assert plain["tensors"] == counted["tensors"]


def test_grouped_conv_weight_gradient_is_explained(tmp_path):
    N, C0, C1, G, K, HW = 2, 4, 8, 4, 3, 10
    path = write(tmp_path, "gconv.py", f"""
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.c1 = torch.nn.Conv2d({C0}, {C1}, {K}, bias=False)
                self.c2 = torch.nn.Conv2d({C1}, {C1}, {K}, groups={G}, bias=False)

            def forward(self, x):
                return self.c2(self.c1(x))

        def get_inputs():
            return [torch.randn({N}, {C0}, {HW}, {HW})]

        def get_init_inputs():
            return []
    """)
    c = check(path, train=True)
    assert c["status"] == "explained"
    e = op_entry(c, "aten::convolution_backward.default")
    O1, O2 = HW - K + 1, HW - K + 2 - K  # unpadded output sizes: 8, then 6
    w1 = C0 * C1 * N * K * K * O1 * O1  # conv1: weight gradient only (x is not trained)
    gi2 = N * C1 * (C1 // G) * K * K * O2 * O2  # conv2 input gradient
    gw2 = (C1 // G) * C1 * N * K * K * O2 * O2  # conv2 weight gradient, Cin/groups channels
    assert e["solar_macs"] == w1 + gi2 + gw2
    assert e["counter_macs"] == w1 + gi2 + G * gw2  # the counter: all Cin channels
    assert "grouped" in e["note"]


def test_without_a_record_the_program_is_counted_separately(tmp_path):
    """attach_crosscheck(result, load, options) with no CaptureRecord: FlopCounterMode runs
    over the loaded program on fake tensors, in the same (train) mode."""
    from solar.frontends.torch import program
    from solar.frontends.torch.capture import load_program

    path = write(tmp_path, "mm.py", """
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.randn(6, 5))

            def forward(self, a):
                return torch.mm(a, self.w)

        def get_inputs():
            return [torch.randn(4, 6)]

        def get_init_inputs():
            return []
    """)
    options = ProgramOptions(train=True, crosscheck=False)
    result = analyze_file(path, options)
    assert result.crosscheck is None
    program.attach_crosscheck(result, lambda: load_program(path), options)
    c = result.crosscheck
    assert c["status"] == "agree"
    # forward mm + the weight gradient's mm: 2 * M * K * N MACs (a is not trained)
    assert c["counter_macs"] == c["solar_macs"] == 2 * 4 * 6 * 5
