"""A linear layer whose weight is 2:4 structured-sparse, y = x @ W^T + bias, in the loop
language. W is declared `sparsity="2:4"`: in every group of 4 consecutive weights along the
input dimension (the contracted one) at least 2 are zero, the pattern NVIDIA's sparse tensor
cores skip. Solar then counts the dense M*N*K MACs, all of them 2:4-eligible (`macs_2_4`: run
at the 2:4 sparse peak on a device that publishes one, 2x dense on H100), and reads W in the
compressed format: half the values plus a 2-bit index per kept value, ceil(ceil(N*K/2) *
(16 + 2) / 8) bytes in bf16 instead of 2*N*K (docs/cost.md, "Bytes").

Sizes: the up-projection of a Llama-2-7B MLP (4096 -> 11008) over a 2048-token prefill, bf16.

    solar analyze examples/loops/sparse_linear.py --arch H100_SXM
    solar validate examples/loops/sparse_linear.py --reference examples/loops/sparse_linear_torch.py --set M=16 --set K=64 --set N=32
"""
from solar.loopir import Tensor, kernel

M, K, N = 2048, 4096, 11008  # tokens, input features, output features

x = Tensor("M,K", dtype="bf16", role="input")
W = Tensor("N,K", dtype="bf16", role="weight", sparsity="2:4")
bias = Tensor("N", dtype="bf16", role="weight")
y = Tensor("M,N", dtype="bf16", role="output")


@kernel
def linear(x, W, bias, y):
    acc = Tensor("M,N", dtype="bf16")
    for m in range(M):
        for n in range(N):
            for k in range(K):
                acc[m, n] += x[m, k] * W[n, k]
    for m in range(M):
        for n in range(N):
            y[m, n] = acc[m, n] + bias[n]


def model():
    linear(x, W, bias, y)
