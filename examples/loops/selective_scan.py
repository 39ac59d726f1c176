"""The selective scan of a Mamba block (Gu and Dao, "Mamba: Linear-Time Sequence Modeling with
Selective State Spaces", 2023, Algorithm 2; mamba_ssm's selective_scan_ref without the skip
term D, the gate z and the softplus of delta), in the loop language as a recurrence over the
sequence (docs/loop-language.md, "Recurrences"):

    h[b, l + 1, d, n] = exp(delta[b, l, d] A[d, n]) h[b, l, d, n] + delta[b, l, d] B[b, l, n] u[b, l, d]
    y[b, l, d]        = sum over n of h[b, l + 1, d, n] C[b, l, n]

h starts at 0 (h[:, 0], its fill). The first nest reads h one step before along l, so it is
lifted to one repeat op of L steps (the loops over b, d and n are each step's), whose step
costs 5 vector FLOPs and one exp per (b, d, n): linear in L. The output is a contraction of
the stacked states with C.

Sizes: a batch of 2 sequences of 256 tokens, 1,024 channels and a state of 16, in fp32.

    solar analyze examples/loops/selective_scan.py --arch H100_SXM
    solar validate examples/loops/selective_scan.py --reference examples/loops/selective_scan_torch.py --set L=16 --set D=8 --set N=4
"""
from solar.loopir import Tensor, exp, kernel

B, L, D, N = 2, 256, 1024, 16
delta = Tensor("B, L, D", role="input")
A = Tensor("D, N", role="weight")
Bm = Tensor("B, L, N", role="input")
u = Tensor("B, L, D", role="input")
Cm = Tensor("B, L, N", role="input")
y = Tensor("B, L, D", role="output")


@kernel
def selective_scan(delta, A, Bm, u, Cm, y):
    h = Tensor("B, L + 1, D, N")                         # the state; h[:, 0] = 0
    for b in range(B):
        for l in range(L):
            for d in range(D):
                for n in range(N):
                    h[b, l + 1, d, n] = (exp(delta[b, l, d] * A[d, n]) * h[b, l, d, n]
                                         + delta[b, l, d] * Bm[b, l, n] * u[b, l, d])
    for b in range(B):
        for l in range(L):
            for d in range(D):
                for n in range(N):
                    y[b, l, d] += h[b, l + 1, d, n] * Cm[b, l, n]


def model():
    selective_scan(delta, A, Bm, u, Cm, y)
