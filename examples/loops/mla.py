"""The projections of DeepSeek-style multi-head latent attention (MLA) and its attention
scores, as a chain of contractions in the loop language:

    c_kv   = x @ W_dkv                 the compressed latent (what MLA keeps in its KV cache)
    k      = c_kv @ W_uk               up-projection of the latent to per-head keys
    v      = c_kv @ W_uv               ... and to per-head values
    q      = x @ W_q                   per-head queries
    scores = q . k  per head           [B, H, S, S] attention logits (unscaled, unmasked)

Sizes follow DeepSeek-V2-Lite: d_model 2048, kv_lora_rank 512, 16 heads of 128 (the decoupled
RoPE key/query parts are left out), one sequence of 1024 tokens, bf16. MACs:
B*S*DM*DC (down) + 2*B*S*DC*H*DH (keys, values) + B*S*DM*H*DH (queries) + B*H*S*S*DH (scores).

    solar analyze examples/loops/mla.py --arch H100_SXM
    solar validate examples/loops/mla.py --reference examples/loops/mla_torch.py --set S=16 --set DM=64 --set DC=16 --set H=2 --set DH=8
"""
from solar.loopir import Tensor, kernel

B, S = 1, 1024  # batch, sequence
DM, DC = 2048, 512  # model width, latent (kv_lora_rank)
H, DH = 16, 128  # heads, head width

x = Tensor("B,S,DM", dtype="bf16", role="input")
W_dkv = Tensor("DM,DC", dtype="bf16", role="weight")
W_uk = Tensor("DC,H,DH", dtype="bf16", role="weight")
W_uv = Tensor("DC,H,DH", dtype="bf16", role="weight")
W_q = Tensor("DM,H,DH", dtype="bf16", role="weight")
c_kv = Tensor("B,S,DC", dtype="bf16", role="output")
v = Tensor("B,S,H,DH", dtype="bf16", role="output")
scores = Tensor("B,H,S,S", dtype="bf16", role="output")


@kernel
def down_project(x, W, out, n_in, n_out):
    for b in range(B):
        for s in range(S):
            for c in range(n_out):
                for m in range(n_in):
                    out[b, s, c] += x[b, s, m] * W[m, c]


@kernel
def up_project(x, W, out, n_in):
    for b in range(B):
        for s in range(S):
            for h in range(H):
                for d in range(DH):
                    for c in range(n_in):
                        out[b, s, h, d] += x[b, s, c] * W[c, h, d]


@kernel
def head_scores(q, k, out):
    for b in range(B):
        for h in range(H):
            for i in range(S):
                for j in range(S):
                    for d in range(DH):
                        out[b, h, i, j] += q[b, i, h, d] * k[b, j, h, d]


def model():
    k = Tensor("B,S,H,DH", dtype="bf16")
    q = Tensor("B,S,H,DH", dtype="bf16")
    down_project(x, W_dkv, c_kv, DM, DC)
    up_project(c_kv, W_uk, k, DC)
    up_project(c_kv, W_uv, v, DC)
    up_project(x, W_q, q, DM)
    head_scores(q, k, scores)
