"""The matmul family in one program (KernelBench format): mm, bmm, addmm, baddbmm, a
linear layer on a rank-3 input, and einsums with three, two (ellipsis) and one operand.

solar analyze examples/torch/matmuls.py --arch H100_SXM --set m=256
"""

import torch
import torch.nn as nn

batch_size = 4
m = 16
k = 32
n = 24
p = 32  # the third einsum operand's free dimension: large enough that left-to-right is
# also the cheapest contraction order, the one opt_einsum picks when installed


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.proj = nn.Linear(k, n)

    def forward(self, a, b, bias, xb, wb, cb, v):
        y_mm = torch.mm(a, b)  # [m, n]
        y_addmm = torch.addmm(bias, a, b, beta=0.5, alpha=2.0)  # [m, n]
        y_bmm = torch.bmm(xb, wb)  # [batch, m, n]
        y_baddbmm = torch.baddbmm(cb, xb, wb)  # [batch, m, n]
        y_linear = self.proj(xb)  # [batch, m, n]
        # Contracted left to right (bij,bjk first): torch's order, and opt_einsum's at these sizes.
        y_chain = torch.einsum("bij,bjk,bkl->bil", xb, wb, v)  # [batch, m, p]
        y_ellipsis = torch.einsum("...ij,...kj->...ik", xb, xb)  # [batch, m, m]
        y_single = torch.einsum("bij->bj", xb)  # one operand: a sum, no contraction
        return y_mm, y_addmm, y_bmm, y_baddbmm, y_linear, y_chain, y_ellipsis, y_single


def get_inputs():
    return [
        torch.randn(m, k),
        torch.randn(k, n),
        torch.randn(n),
        torch.randn(batch_size, m, k),
        torch.randn(batch_size, k, n),
        torch.randn(batch_size, m, n),
        torch.randn(batch_size, n, p),
    ]


def get_init_inputs():
    return [k, n]
