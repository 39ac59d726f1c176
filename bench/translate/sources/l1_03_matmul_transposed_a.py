"""C = A^T @ B where A is stored K x M (level 1: matmul with a transposed operand)."""
import torch
import torch.nn as nn

M = 512
K = 1024
N = 768


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.T, B)


def get_inputs():
    return [torch.randn(K, M), torch.randn(K, N)]


def get_init_inputs():
    return []
