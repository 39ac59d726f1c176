"""LayerNorm over the last dimension with a learned weight and bias, in the loop language:

    y = (x - mean(x)) / sqrt(var(x) + EPS) * weight + bias      (biased variance)

written as the decomposition Solar's aten lowering of `F.layer_norm` counts (src/lower/aten_norm.cc,
lower_layer_norm): a row sum, the mean (times 1/D), the centred values, the sum of their
squares, rstd = rsqrt(sqsum/D + EPS), and y = centred * rstd * weight + bias. Per row of D
that is (D-1) + 1 + D + (2D-1) + 2 + 3D vector FLOPs and one rsqrt.

Sizes: the pre-attention norm of a GPT-2-medium-like block, 8 sequences of 1024 tokens,
d_model 1024, in fp32.

    solar analyze examples/loops/layernorm.py --arch H100_SXM
    solar validate examples/loops/layernorm.py --reference examples/loops/layernorm_torch.py --set B=2 --set S=16 --set D=64
"""
from solar.loopir import Tensor, kernel, rsqrt

B, S, D = 8, 1024, 1024
EPS = 1e-5

x = Tensor("B,S,D", dtype="f32", role="input")
weight = Tensor("D", dtype="f32", role="weight")
bias = Tensor("D", dtype="f32", role="weight")
y = Tensor("B,S,D", dtype="f32", role="output")


@kernel
def layernorm(x, weight, bias, y, n, eps):
    row_sum = Tensor("B,S", dtype="f32")
    mean = Tensor("B,S", dtype="f32")
    centred = Tensor("B,S,D", dtype="f32")
    sqsum = Tensor("B,S", dtype="f32")
    rstd = Tensor("B,S", dtype="f32")
    for b in range(B):
        for s in range(S):
            for d in range(n):
                row_sum[b, s] += x[b, s, d]
    for b in range(B):
        for s in range(S):
            mean[b, s] = row_sum[b, s] * (1 / n)
    for b in range(B):
        for s in range(S):
            for d in range(n):
                centred[b, s, d] = x[b, s, d] - mean[b, s]
    for b in range(B):
        for s in range(S):
            for d in range(n):
                sqsum[b, s] += centred[b, s, d] * centred[b, s, d]
    for b in range(B):
        for s in range(S):
            rstd[b, s] = rsqrt(sqsum[b, s] * (1 / n) + eps)
    for b in range(B):
        for s in range(S):
            for d in range(n):
                y[b, s, d] = centred[b, s, d] * rstd[b, s] * weight[d] + bias[d]


def model():
    layernorm(x, weight, bias, y, D, EPS)
