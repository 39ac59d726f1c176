"""The module tree and the `--by module|line|op` views of `solar analyze` on real programs:
a 12-layer GPT-2-style PyTorch model (examples/torch/gpt2.py), a Flax model and a plain JAX
function with jax.named_scope (docs/report-json.md `modules`, docs/cli.md `--by`)."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from conftest import EXAMPLES, run_solar

GPT2 = str(EXAMPLES / "torch" / "gpt2.py")
# Small sizes: the program's own constants, overridden as a user would.
B, T, V, D, H, L = 2, 8, 32, 16, 2, 12
SIZES = ["--set", f"batch_size={B}", "--set", f"seq_len={T}", "--set", f"vocab={V}",
         "--set", f"d_model={D}", "--set", f"n_heads={H}", "--no-crosscheck"]


def causal_pairs(t: int) -> int:
    return t * (t + 1) // 2  # query l sees keys 0..l


def block_macs() -> int:
    return (B * T * D * 3 * D  # attn.c_attn
            + 2 * B * H * causal_pairs(T) * (D // H)  # causal Q K^T and P V
            + B * T * D * D  # attn.c_proj
            + 2 * B * T * D * 4 * D)  # mlp.c_fc and mlp.c_proj


def analyze_json(*args):
    pytest.importorskip("torch")
    r = run_solar("analyze", *args, "--json", "-")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def analyze_text(*args):
    pytest.importorskip("torch")
    r = run_solar("analyze", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def section(text: str, title: str) -> list:
    """The rows of the table under `title` (after its header and rule), to the blank line."""
    lines = text[text.index(title):].splitlines()[3:]
    return lines[:lines.index("")] if "" in lines else lines


def child(node, name):
    found = [c for c in node["children"] if c["name"] == name]
    assert len(found) == 1, [c["name"] for c in node["children"]]
    return found[0]


@pytest.fixture(scope="module")
def gpt2():
    return analyze_json(GPT2, *SIZES)


def test_gpt2_tree_has_twelve_blocks_whose_macs_are_the_formula(gpt2):
    root = gpt2["modules"]
    assert root["path"] == "" and root["type"] == "Model"
    assert [c["name"] for c in root["children"]] == ["wte", "wpe", "h", "ln_f", "lm_head"]
    h = child(root, "h")
    assert h["type"] == "ModuleList"
    assert [c["path"] for c in h["children"]] == [f"h.{i}" for i in range(L)]
    assert all(c["type"] == "Block" for c in h["children"])
    assert all(c["macs"] == block_macs() for c in h["children"])
    assert h["macs"] == L * block_macs()
    assert child(root, "lm_head")["macs"] == B * T * D * V
    assert root["macs"] == gpt2["totals"]["macs"] == L * block_macs() + B * T * D * V
    attn = child(h["children"][3], "attn")
    assert attn["type"] == "CausalSelfAttention" and attn["path"] == "h.3.attn"
    assert child(attn, "c_attn")["macs"] == B * T * D * 3 * D
    # Every op names its module; the op rows carry it.
    assert {o["module"] for o in gpt2["ops"]} >= {"h.0.attn.c_attn", "h.11.mlp.c_proj", "lm_head"}


def test_gpt2_block_shares_sum_to_the_whole(gpt2):
    root = gpt2["modules"]
    for dev, level in root["devices"].items():
        assert level["share"] == pytest.approx(1.0)
        h = child(root, "h")
        blocks = sum(c["devices"][dev]["share"] for c in h["children"])
        assert blocks == pytest.approx(h["devices"][dev]["share"], rel=1e-9)
        # The top-level rows and the program's own ops (the embedding add) hold the whole.
        own = sum(o["share"][dev] for o in gpt2["ops"] if o["module"] == "")
        top = sum(c["devices"][dev]["share"] for c in root["children"])
        assert top + own == pytest.approx(1.0, rel=1e-9)
        seconds = sum(c["devices"][dev]["unfused_seconds"] for c in h["children"])
        assert seconds == pytest.approx(h["devices"][dev]["unfused_seconds"], rel=1e-9)


def test_gpt2_fused_bytes_are_the_block_boundary(gpt2):
    # A block reads the residual stream and its own weights and writes the stream once.
    stream = B * T * D * 4
    weights = 4 * (2 * D + (3 * D * D + 3 * D) + (D * D + D) + 2 * D
                   + (4 * D * D + 4 * D) + (4 * D * D + D))
    for block in child(gpt2["modules"], "h")["children"]:
        assert block["bytes_fused"] == 2 * stream + weights
    assert gpt2["modules"]["bytes_fused"] == gpt2["totals"]["bytes_fused"]


def test_default_text_is_the_module_tree_down_to_depth_three():
    text = analyze_text(GPT2, *SIZES)
    assert "modules on H100_SXM (depth 3" in text
    assert "top ops by share" not in text
    rows = re.findall(r"^ {4}(\d+) +Block ", text, re.M)
    assert rows == [str(i) for i in range(L)]
    assert re.search(r"^ {6}attn +CausalSelfAttention ", text, re.M)
    assert not re.search(r"^ {8}c_attn ", text, re.M)  # depth 4


def test_depth_one_shows_only_top_level_rows():
    text = analyze_text(GPT2, *SIZES, "--depth", "1")
    table = section(text, "modules on")
    assert re.match(r"\(program\) +Model ", table[0])
    assert [row.split()[0] for row in table[1:]] == ["wte", "wpe", "h", "ln_f", "lm_head", "(own"]
    assert all(row.startswith("  ") and not row.startswith("   ") for row in table[1:])


def test_by_line_groups_distinct_source_lines():
    text = analyze_text(GPT2, *SIZES, "--by", "line", "--top", "100")
    table = section(text, "source lines by share")
    lines = [row.split()[0] for row in table if not row.startswith("...")]
    assert len(lines) == len(set(lines)) > 5
    assert all(re.search(r"gpt2\.py:\d+$", x) for x in lines)
    # The twelve blocks run the same lines: one row each, with every block's ops.
    src = open(GPT2).read().splitlines()
    c_attn = next(i + 1 for i, s in enumerate(src) if "self.c_attn(x)" in s)
    row = next(r for r in table if r.split()[0].endswith(f"gpt2.py:{c_attn}"))
    assert int(row.split()[1]) % L == 0


def test_by_op_is_the_top_ops_table():
    text = analyze_text(GPT2, *SIZES, "--by", "op")
    assert "top ops by share" in text and "modules on" not in text


def test_a_childs_fused_time_is_at_most_its_parents(gpt2):
    """A module's boundary can cross bytes its parent keeps on chip (attn.c_attn writes q, k
    and v, which attn keeps): its fused time is capped at its parent's, so that no row is
    slower than the row holding it, and the top level no slower than the program."""
    def walk(node, parent):
        for dev, level in node["devices"].items():
            if parent is not None:
                assert level["fused_seconds"] <= parent["devices"][dev]["fused_seconds"], (
                    node["path"], parent["path"])
        for c in node["children"]:
            walk(c, node)
    walk(gpt2["modules"], None)
    # The cap binds where the child's own boundary is wider than its parent's.
    attn = child(child(child(gpt2["modules"], "h"), "3"), "attn")
    for dev, level in attn["devices"].items():
        assert child(attn, "c_attn")["devices"][dev]["fused_seconds"] == level["fused_seconds"]


def test_a_modules_fused_time_is_at_most_its_unfused_and_its_parents_on_a_decode():
    """A Llama decode step: the decoder stack's boundary counts the whole KV cache it reads
    in part, which as one kernel would be slower than its ops apart; one kernel is no slower
    than its ops apart, and no module is slower than the program (the issue's `model` row)."""
    pytest.importorskip("transformers")
    report = analyze_json("hf:llama-3.1-8b", "--phase", "decode", "--arch", "H100_SXM",
                          "--no-crosscheck")

    def walk(node, parent):
        for dev, level in node["devices"].items():
            if parent is not None:
                assert level["fused_seconds"] <= level["unfused_seconds"], node["path"]
                assert level["fused_seconds"] <= parent["devices"][dev]["fused_seconds"], (
                    node["path"])
        for c in node["children"]:
            walk(c, node)
    walk(report["modules"], None)


def test_own_ops_rows_at_every_level_that_has_them():
    """Each block runs its residual adds outside its submodules, and attention its einsums
    outside c_attn and c_proj, the MLP its GELU between c_fc and c_proj: an "(own ops)" row
    under each such module."""
    text = analyze_text(GPT2, *SIZES, "--depth", "4")
    table = section(text, "modules on")
    own = [row for row in table if row.strip().startswith("(own ops)")]
    indents = {len(row) - len(row.lstrip()) for row in own}
    assert indents == {2, 6, 8}  # the program, each block, each block's attn and mlp
    assert len([r for r in own if r.startswith(" " * 8 + "(own")]) == 2 * L


def test_the_cache_aware_column_is_a_share_of_the_level():
    text = analyze_text(GPT2, *SIZES)
    table = text[text.index("modules on"):].splitlines()
    header = table[1]
    assert "cache-aware part" in header
    col = header.index("cache-aware part") + len("cache-aware part")
    program = table[3]
    assert program.startswith("(program)")
    assert program[:col].rstrip().endswith("100.0%")


def test_by_op_names_the_module_and_the_framework_op():
    text = analyze_text(GPT2, *SIZES, "--by", "op", "--top", "400")
    table = section(text, "top ops by share")
    assert text[text.index("top ops by share"):].splitlines()[1].split()[:2] == ["module", "op"]
    rows = [r for r in table if not r.startswith("...")]
    assert all(re.match(r"(\(program\)|[\w.]+) ", r) for r in rows)
    assert any(r.split()[0].endswith(".attn") and "scaled_dot_product" in r for r in rows)
    assert not re.search(r"\bt\d+\.\w+\d\b", "\n".join(rows))  # no t82.exp33


def test_unknown_by_is_a_usage_error():
    pytest.importorskip("torch")
    r = run_solar("analyze", GPT2, *SIZES, "--by", "layer")
    assert r.returncode != 0 and "--by" in r.stderr


def test_saved_trace_and_graph_json_keep_the_modules(tmp_path):
    trace = tmp_path / "gpt2.trace.json"
    analyze_text(GPT2, *SIZES, "--save-trace", str(trace))
    t = json.loads(trace.read_text())
    assert t["modules"][""] == "Model" and t["modules"]["h.5.mlp"] == "MLP"
    assert any(o.get("module") == "h.5.mlp.c_fc" for o in t["ops"])
    again = analyze_json(str(trace))  # the trace alone rebuilds the same tree
    assert again["modules"]["children"][2]["children"][5]["path"] == "h.5"
    assert again["modules"]["macs"] == L * block_macs() + B * T * D * V


FLAX = textwrap.dedent('''
    import numpy as np
    import flax.linen as nn
    import jax

    class Mlp(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(8)(nn.relu(nn.Dense(32)(x)))

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = x + Mlp()(x)
            x = x + Mlp()(x)
            return nn.Dense(4, name="head")(x)

    def get_inputs():
        return [np.ones((2, 8), np.float32)]
''')


def test_flax_name_stack_is_the_module_tree(tmp_path):
    pytest.importorskip("flax")
    prog = tmp_path / "flax_tree.py"
    prog.write_text(FLAX)
    r = run_solar("analyze", str(prog), "--json", "-")
    assert r.returncode == 0, r.stderr
    root = json.loads(r.stdout)["modules"]
    assert root["type"] == "Model"
    assert [c["path"] for c in root["children"]] == ["Mlp_0", "Mlp_1", "head"]
    mlp = root["children"][0]
    assert mlp["type"] == "Mlp"
    # nn.Dense(8)(...) is built (Dense_0) before its argument's nn.Dense(32) (Dense_1), which
    # runs first: children are in first-use order.
    assert [c["path"] for c in mlp["children"]] == ["Mlp_0.Dense_1", "Mlp_0.Dense_0"]
    assert mlp["macs"] == 2 * 8 * 32 + 2 * 32 * 8
    assert root["children"][2]["macs"] == 2 * 8 * 4


NAMED_SCOPE = textwrap.dedent('''
    import jax
    import jax.numpy as jnp
    import numpy as np

    def forward(x, w1, w2):
        with jax.named_scope("attn"):
            y = jnp.tanh(x @ w1)
        with jax.named_scope("mlp"):
            with jax.named_scope("up"):
                z = jax.jit(lambda a: a @ w2)(y)
        return z

    def get_inputs():
        return [np.ones((4, 8), np.float32), np.ones((8, 8), np.float32),
                np.ones((8, 16), np.float32)]
''')


def test_jax_named_scopes_appear_in_the_tree(tmp_path):
    pytest.importorskip("jax")
    prog = tmp_path / "scoped.py"
    prog.write_text(NAMED_SCOPE)
    r = run_solar("analyze", str(prog), "--json", "-")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    root = d["modules"]
    assert [c["path"] for c in root["children"]] == ["attn", "mlp"]
    assert child(root, "attn")["macs"] == 4 * 8 * 8
    up = child(child(root, "mlp"), "up")
    assert up["path"] == "mlp.up" and up["macs"] == 4 * 8 * 16  # through the inner jit
    text = run_solar("analyze", str(prog), "--depth", "2").stdout
    assert re.search(r"^ {4}up ", text, re.M)
