"""nn.LSTM / nn.GRU / nn.RNN captured as one op per layer call and lowered to one repeat op
per layer and direction (src/lower/aten_rnn.cc; docs/torch-frontend.md, "Recurrent layers"),
against the per-step capture (`--unroll`): op counts, totals equal up to the stated
difference (the per-step trace's as_strided_scatter writes through chunk views), validation
by execution, and a KernelBench-size LSTM captured in seconds. Real PyTorch throughout."""

from __future__ import annotations

import json
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")

from solar.programs import ProgramOptions, analyze_file  # noqa: E402

T, B, I, H, P = 4, 2, 3, 5, 2  # sequence, batch, input, hidden, LSTM projection
SCATTER = "aten::as_strided_scatter.default"
# Writes through chunk views per cell step in torch's CPU kernel (RNN.cpp): LSTM's four
# in-place activations of its gate chunks; GRU's add_ + sigmoid_ on the r and z chunks and
# mul_ on the n chunk; the simple RNN writes no view.
SCATTERS_PER_STEP = {"LSTM": 4, "GRU": 5, "RNN": 0}


@pytest.fixture(autouse=True)
def _threads():
    n = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(n)


def program(tmp_path, kind: str, layers: int, bidirectional: bool, batch_first: bool,
            nonlinearity: str = "tanh", proj: int = 0, bias: bool = True,
            returns: str = "out") -> str:
    extra = f", nonlinearity={nonlinearity!r}" if kind == "RNN" else ""
    extra += f", proj_size={proj}" if proj else ""
    shape = (B, T, I) if batch_first else (T, B, I)
    path = tmp_path / (f"{kind}_{nonlinearity}_{layers}_{bidirectional}_{batch_first}_{proj}"
                       f"_{returns.replace('[', '').replace(']', '')}.py")
    path.write_text(textwrap.dedent(f"""\
        import torch
        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = torch.nn.{kind}({I}, {H}, num_layers={layers}, bias={bias},
                    bidirectional={bidirectional}, batch_first={batch_first}{extra})
            def forward(self, x):
                out, state = self.rnn(x)
                return {returns}
        def get_inputs(): return [torch.randn{shape}]
        def get_init_inputs(): return []
        """))
    return str(path)


def analyze(path: str, **kw):
    return analyze_file(path, ProgramOptions(crosscheck=False, cache_aware=False, **kw))


def totals(r) -> dict:
    t = r.report.to_dict()
    dev = t["devices"]["H100_SXM"]
    tot = t["totals"]
    return {"macs": tot["macs"], "flops": tot["flops"], "special_ops": tot["special_ops"],
            "f32_vector_flops": tot["vector_flops_by_dtype"].get("f32", 0),
            "bytes_unfused": tot["bytes_unfused"], "bytes_fused": tot["bytes_fused"],
            "unfused_s": dev["unfused"]["seconds"], "fused_s": dev["fused"]["seconds"]}


def ops(r) -> list:
    return r.report.to_dict()["ops"]


def scatter_rows(r) -> list:
    """The counted (live) graph ops lowered from the per-step trace's as_strided_scatter."""
    return [o for o in r.report.to_dict()["ops"]
            if o["origin"]["op"] == SCATTER and o["class"] != "dead"]


CASES = [(kind, nl, layers, bidi, bf, 0)
         for kind, nl in (("LSTM", "tanh"), ("GRU", "tanh"), ("RNN", "tanh"), ("RNN", "relu"))
         for layers in (1, 2) for bidi in (False, True) for bf in (False, True)]
CASES += [("LSTM", "tanh", 2, True, True, P), ("LSTM", "tanh", 1, False, False, P)]


@pytest.mark.parametrize("kind,nl,layers,bidi,bf,proj", CASES)
def test_repeat_equals_unrolled(tmp_path, kind, nl, layers, bidi, bf, proj):
    path = program(tmp_path, kind, layers, bidi, bf, nl, proj)
    rep, unr = analyze(path), analyze(path, unroll=True)
    assert not rep.warnings and not unr.warnings
    D = 2 if bidi else 1
    # (a) one repeat op per layer and direction, each over the T steps; far fewer ops
    repeats = [o for o in ops(rep) if o["kind"] == "repeat"]
    assert len(repeats) == layers * D
    assert not [o for o in ops(unr) if o["kind"] == "repeat"]
    assert len(ops(rep)) * 3 < len(ops(unr))
    names = [op["op"] for op in rep.trace["ops"]]
    assert names.count(f"aten::{'rnn_' + nl if kind == 'RNN' else kind.lower()}.input") == 1
    # (b) every total equals the per-step form's, less its live as_strided_scatter ops
    # (one per write through a chunk view: SCATTERS_PER_STEP per step, layer and direction,
    # each B*H i64 offsets computed, docs/torch-frontend.md)
    a, b = totals(rep), totals(unr)
    rows = scatter_rows(unr)
    offsets = [o for o in rows if o["kind"] == "opaque"]
    assert len(offsets) == SCATTERS_PER_STEP[kind] * T * layers * D
    assert sum(o["vector_flops"] for o in rows) == len(offsets) * B * H
    assert all(o["macs"] == 0 and o["special_ops"] == 0 for o in rows)
    assert all(o["vector_flops"] == 0 for o in rows if o["kind"] != "opaque")
    assert a["macs"] == b["macs"]
    assert a["special_ops"] == b["special_ops"]
    assert a["f32_vector_flops"] == b["f32_vector_flops"]
    assert a["flops"] == b["flops"] - len(offsets) * B * H
    assert a["bytes_unfused"] == b["bytes_unfused"] - sum(o["bytes"] for o in rows)
    # per scatter: the offsets (i64) written and read, the B*H values read and written
    assert sum(o["bytes"] for o in rows) == len(offsets) * B * H * (8 + 8 + 4 + 4)
    assert a["bytes_fused"] == b["bytes_fused"]
    assert a["fused_s"] == pytest.approx(b["fused_s"], rel=1e-12)
    scatter_s = sum(o["seconds"]["H100_SXM"] for o in rows)
    assert a["unfused_s"] == pytest.approx(b["unfused_s"] - scatter_s, rel=1e-9)
    if kind == "LSTM" and not proj:
        Hs = H
        macs = T * B * 4 * Hs * (I + Hs) * D + (layers - 1) * T * B * 4 * Hs * (D * Hs + Hs) * D
        assert a["macs"] == macs


def test_lstm_reading_only_c_n(tmp_path):
    # Only c_n is read (KernelBench's 37_LSTMCn): the last step's h' = o*tanh(c') is dead,
    # and so is its output gate sigmoid(o). The repeat form finds both dead; the per-step
    # form keeps that one sigmoid_ live, since it wrote o into the gates buffer whose next
    # version the c' update reads (docs/torch-frontend.md, "Recurrent layers").
    layers = 2
    path = program(tmp_path, "LSTM", layers, False, False, returns="state[1]")
    rep, unr = analyze(path), analyze(path, unroll=True)
    a, b = totals(rep), totals(unr)
    rows = scatter_rows(unr)
    assert len([o for o in rows if o["kind"] == "opaque"]) == 4 * T * layers
    sigmoid_special, sigmoid_flops = 2 * B * H, B * H  # exp and reciprocal; one add
    assert a["macs"] == b["macs"]
    assert a["special_ops"] == b["special_ops"] - sigmoid_special
    assert a["f32_vector_flops"] == b["f32_vector_flops"] - sigmoid_flops
    assert a["bytes_unfused"] == b["bytes_unfused"] - sum(o["bytes"] for o in rows) - 8 * B * H
    assert a["bytes_fused"] == b["bytes_fused"]


@pytest.mark.parametrize("kind,nl,layers,bidi,bf,proj", [
    ("LSTM", "tanh", 2, True, True, 0), ("LSTM", "tanh", 1, False, False, P),
    ("GRU", "tanh", 2, True, False, 0), ("RNN", "tanh", 1, True, True, 0),
    ("RNN", "relu", 2, False, False, 0)])
def test_repeat_validates(tmp_path, kind, nl, layers, bidi, bf, proj):
    # (c) the executor runs the repeat ops; the outputs equal torch's
    path = program(tmp_path, kind, layers, bidi, bf, nl, proj)
    r = analyze_file(path, ProgramOptions(validate=True, crosscheck=False, cache_aware=False))
    assert any(op["op"].endswith(".input") for op in r.trace["ops"])
    v = r.validation
    assert v["status"] == "passed", json.dumps(v)[:2000]


def test_packed_sequence_and_train_fall_back(tmp_path):
    path = tmp_path / "packed.py"
    path.write_text(textwrap.dedent("""\
        import torch
        from torch.nn.utils.rnn import pack_padded_sequence
        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = torch.nn.GRU(3, 5)
            def forward(self, x):
                packed = pack_padded_sequence(x, torch.tensor([4, 2]))
                return self.rnn(packed)[1]
        def get_inputs(): return [torch.randn(4, 2, 3)]
        def get_init_inputs(): return []
        """))
    r = analyze(str(path))
    assert not any(op["op"].endswith(".input") for op in r.trace["ops"])
    lstm = program(tmp_path, "LSTM", 1, False, False)
    t = analyze(lstm, train=True)  # autograd records the call: per step, with its backward
    assert not any(op["op"].endswith(".input") for op in t.trace["ops"])
    assert not t.warnings


KERNELBENCH_LSTM = """\
import torch
import torch.nn as nn
batch_size, sequence_length, input_size, hidden_size, num_layers, output_size = 10, 512, 128, 256, 6, 10
class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.h0 = torch.randn((num_layers, batch_size, hidden_size))
        self.c0 = torch.randn((num_layers, batch_size, hidden_size))
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True,
                            dropout=dropout, bidirectional=False)
        self.fc = nn.Linear(hidden_size, output_size)
    def forward(self, x):
        out, state = self.lstm(x, (self.h0, self.c0))
        return self.fc(out[:, -1, :])
def get_inputs(): return [torch.randn(batch_size, sequence_length, input_size)]
def get_init_inputs(): return [input_size, hidden_size, num_layers, output_size]
"""


def test_kernelbench_lstm_in_seconds(tmp_path):
    path = tmp_path / "lstm_kb.py"
    path.write_text(KERNELBENCH_LSTM)
    start = time.perf_counter()
    r = analyze(str(path))
    elapsed = time.perf_counter() - start
    assert not r.warnings
    assert len([o for o in ops(r) if o["kind"] == "repeat"]) == 6
    Tn, Bn, In, Hn = 512, 10, 128, 256
    lstm_macs = Tn * Bn * 4 * Hn * (In + Hn) + 5 * Tn * Bn * 4 * Hn * (Hn + Hn)
    assert r.report.to_dict()["totals"]["macs"] == lstm_macs + Bn * Hn * 10
    assert elapsed < 30, elapsed


def test_the_cross_check_says_when_it_compared_nothing(tmp_path):
    # FlopCounterMode has no formula for an LSTM recorded as one op: a program of LSTM layers
    # alone is "not_compared", not an agreement; with the unrolled capture its per-step mm
    # and addmm are compared and agree.
    path = program(tmp_path, "LSTM", layers=2, bidirectional=True, batch_first=False)
    repeat = analyze_file(path, ProgramOptions(cache_aware=False)).report.to_dict()["crosscheck"]
    assert repeat["status"] == "not_compared"
    assert repeat["compared_ops"] == 0 and repeat["not_compared_ops"] >= 1
    unrolled = analyze_file(path, ProgramOptions(cache_aware=False, unroll=True))
    steps = unrolled.report.to_dict()["crosscheck"]
    assert steps["status"] == "agree" and steps["compared_ops"] >= 1
    assert steps["solar_macs"] == steps["counter_macs"] == repeat["solar_macs"]
