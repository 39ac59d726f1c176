"""Causal scaled-dot-product attention, softmax(Q K^T / sqrt(D) + causal mask) V, in the loop
language. The mask is an `if k <= q:` guard (query q sees keys 0..q), so every nest counts only
the S(S+1)/2 live (query, key) pairs of each head: B*H*S*(S+1)/2*D MACs for Q K^T and as many
for P V.

The nests follow the decomposition Solar's aten lowering of
`F.scaled_dot_product_attention(..., is_causal=True)` counts (src/lower/aten_attention.cc, lower_sdpa):
scores, scaled scores, the row max, exp(scaled - max), the row sum, the division, and P V,
each under the causal mask.

Sizes: a Llama-2-7B-like layer at prefill, 1 sequence of 2048 tokens, 32 heads of 128, bf16.

    solar analyze examples/loops/causal_attention.py --arch H100_SXM
    solar validate examples/loops/causal_attention.py --reference examples/loops/causal_attention_torch.py --set H=2 --set S=32 --set D=16
"""
from solar.loopir import Tensor, exp, inf, kernel, max, sqrt

B, H, S, D = 1, 32, 2048, 128
SCALE = 1 / sqrt(D)

Q = Tensor("B,H,S,D", dtype="bf16", role="input")
K = Tensor("B,H,S,D", dtype="bf16", role="input")
V = Tensor("B,H,S,D", dtype="bf16", role="input")
out = Tensor("B,H,S,D", dtype="bf16", role="output")


@kernel
def causal_attention(Q, K, V, out, scale):
    scores = Tensor("B,H,S,S", dtype="bf16")
    scaled = Tensor("B,H,S,S", dtype="bf16")
    row_max = Tensor("B,H,S", dtype="bf16", fill=-inf)
    e = Tensor("B,H,S,S", dtype="bf16")
    row_sum = Tensor("B,H,S", dtype="bf16")
    probs = Tensor("B,H,S,S", dtype="bf16")
    for b in range(B):
        for h in range(H):
            for q in range(S):
                for k in range(S):
                    if k <= q:
                        for d in range(D):
                            scores[b, h, q, k] += Q[b, h, q, d] * K[b, h, k, d]
    for b in range(B):
        for h in range(H):
            for q in range(S):
                for k in range(S):
                    if k <= q:
                        scaled[b, h, q, k] = scores[b, h, q, k] * scale
    for b in range(B):
        for h in range(H):
            for q in range(S):
                for k in range(S):
                    if k <= q:
                        row_max[b, h, q] = max(row_max[b, h, q], scaled[b, h, q, k])
    for b in range(B):
        for h in range(H):
            for q in range(S):
                for k in range(S):
                    if k <= q:
                        e[b, h, q, k] = exp(scaled[b, h, q, k] - row_max[b, h, q])
    for b in range(B):
        for h in range(H):
            for q in range(S):
                for k in range(S):
                    if k <= q:
                        row_sum[b, h, q] += e[b, h, q, k]
    for b in range(B):
        for h in range(H):
            for q in range(S):
                for k in range(S):
                    if k <= q:
                        probs[b, h, q, k] = e[b, h, q, k] / row_sum[b, h, q]
    for b in range(B):
        for h in range(H):
            for q in range(S):
                for d in range(D):
                    for k in range(S):
                        if k <= q:
                            out[b, h, q, d] += probs[b, h, q, k] * V[b, h, k, d]


def model():
    causal_attention(Q, K, V, out, SCALE)
