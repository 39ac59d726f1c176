"""Matrix times vector at the size of KernelBench level 1's problem of the same file name (our own program)."""
import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


M, K = 2048, 1048576


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, 1)]


def get_init_inputs():
    return []
