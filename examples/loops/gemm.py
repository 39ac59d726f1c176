"""C = A @ B: the smallest loop program (docs/loop-language.md)."""
from solar.loopir import Tensor, kernel

M, N, K = 512, 1024, 256

A = Tensor("M,K", dtype="bf16", role="input")
B = Tensor("K,N", dtype="bf16", role="weight")
C = Tensor("M,N", dtype="bf16", role="output")


@kernel
def gemm(A, B, C):
    for m in range(M):
        for n in range(N):
            for k in range(K):
                C[m, n] += A[m, k] * B[k, n]


def model():
    gemm(A, B, C)
