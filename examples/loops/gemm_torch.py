"""The PyTorch twin of gemm.py: the same tensors, by the same names, as forward arguments."""
import torch
import torch.nn as nn

M, N, K = 512, 1024, 256


class Model(nn.Module):
    def forward(self, A, B):
        return A @ B


def get_inputs():
    return [torch.randn(M, K, dtype=torch.bfloat16), torch.randn(K, N, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
