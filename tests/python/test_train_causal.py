"""A causal LM's training step counts its attention core over the causal pairs only (key <=
query), forward and backward, as its inference prefill does: docs/models.md "Training".
Llama-3.1-8B with one layer, on fake tensors; every expectation a formula of the config.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from solar import models  # noqa: E402
from solar.programs import ProgramOptions  # noqa: E402

B, S = 2, 16
H, D = 32, 128  # Llama-3.1-8B: attention heads, head dim
CAUSAL = B * H * D * S * (S + 1) // 2  # MACs of one contraction over the pairs key <= query
SQUARE = B * H * D * S * S  # the same contraction over every (query, key) pair
SDPA = "aten::_scaled_dot_product_flash_attention_for_cpu.default"
SDPA_BACKWARD = "aten::_scaled_dot_product_flash_attention_for_cpu_backward.default"


def attention_ops(recompute: str):
    run = models.ModelRun("hf:llama-3.1-8b", batch=B, seq=S,
                          config={"num_hidden_layers": 1}, optimizer="none",
                          recompute=recompute)
    result = models.analyze_model(run, ProgramOptions(train=True, crosscheck=False,
                                                      cache_aware=False))
    assert result.warnings == [] and result.report.coverage.unanalyzed == 0
    return [o for o in result.report.ops
            if o.origin.op in (SDPA, SDPA_BACKWARD) and o.macs]


@pytest.mark.parametrize("recompute,forwards", [
    ("none", 1),
    ("selective", 2),  # the attention core runs again in the backward pass
    ("full", 2),  # the decoder layer runs again
])
def test_every_attention_contraction_of_a_training_step_counts_the_causal_pairs(
        recompute, forwards):
    """Forward: QK^T and PV. Backward: P recomputed (QK^T), dV = P^T dO, dP = dO V^T,
    dQ = dS K, dK = dS^T Q, each over the causal pairs; and D = rowsum(dO * O), one MAC per
    query element. The dense count (macs_dense) is the full square."""
    ops = attention_ops(recompute)
    forward = [o for o in ops if o.origin.op == SDPA]
    backward = [o for o in ops if o.origin.op == SDPA_BACKWARD]
    assert sorted(o.macs for o in forward) == [CAUSAL] * (2 * forwards)
    assert all(o.macs_dense == SQUARE for o in forward)
    rowdot = B * H * S * D
    assert sorted(o.macs for o in backward) == sorted([CAUSAL] * 5 + [rowdot])
    assert sorted(o.macs_dense for o in backward) == sorted([SQUARE] * 5 + [rowdot])


def test_the_packed_sequence_patch_is_undone_after_the_step():
    """The step answers transformers' packed-sequence check only while its forward runs."""
    from transformers import masking_utils

    before = masking_utils.find_packed_sequence_indices
    attention_ops("none")
    assert masking_utils.find_packed_sequence_indices is before
