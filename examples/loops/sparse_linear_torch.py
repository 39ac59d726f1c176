"""The PyTorch twin of sparse_linear.py: a dense `F.linear` whose weight happens to hold the
2:4 pattern (2 zeros in every 4 consecutive weights along the input dimension). Solar's
PyTorch frontend does not know the weight is sparse: it counts dense bytes and no 2:4 MACs."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M, K, N = 2048, 4096, 11008


class Model(nn.Module):
    def forward(self, x, W, bias):
        return F.linear(x, W, bias)


def two_of_four(n, k):
    """A dense [n, k] weight with two zeros in every group of four along k."""
    w = torch.randn(n, k // 4, 4)
    drop = torch.rand(n, k // 4, 4).argsort(dim=-1)[..., :2]
    return w.scatter(-1, drop, 0.0).reshape(n, k)


def get_inputs():
    return [torch.randn(M, K, dtype=torch.bfloat16), two_of_four(N, K).to(torch.bfloat16),
            torch.randn(N, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
