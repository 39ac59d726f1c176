"""C = A @ B, square at the size of KernelBench level 1's problem of the same file name (our own program)."""
import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


N = 4096


def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]


def get_init_inputs():
    return []
