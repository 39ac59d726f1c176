"""C = A @ B for square-ish fp32 matrices (level 1: matmul)."""
import torch
import torch.nn as nn

M = 1024
K = 2048
N = 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
