"""A selective state-space (linear recurrence) block written with cumsum and exp
(KernelBench format): h_t = a_t * h_{t-1} + u_t with an input-dependent decay a_t in (0, 1),
computed for all t at once as h = exp(A) * cumsum(exp(-A) * u), A = cumsum(log a); then
gated by SiLU and projected back.

solar analyze examples/torch/ssm.py --arch H100_SXM --set seq_len=64
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
seq_len = 16  # exp(-A) grows with the sequence: a few hundred steps stay fine in fp32
d_model = 16
d_state = 24


class Model(nn.Module):
    def __init__(self, d_model, d_state):
        super().__init__()
        self.in_proj = nn.Linear(d_model, 2 * d_state)  # input u and gate z
        self.decay = nn.Linear(d_model, d_state)
        self.out_proj = nn.Linear(d_state, d_model, bias=False)
        self.step = 0.1

    def forward(self, x):
        u, z = self.in_proj(x).chunk(2, dim=-1)  # [batch, seq, d_state] each
        # log of a decay in (0, 1), kept near 1 (a small step, as selective SSMs use) so that
        # exp(-A) stays moderate and the two cumsums do not cancel catastrophically
        log_a = -self.step * F.softplus(self.decay(x))
        big_a = torch.cumsum(log_a, dim=1)  # A_t = sum_{s<=t} log a_s
        h = torch.exp(big_a) * torch.cumsum(torch.exp(-big_a) * u, dim=1)
        return x + self.out_proj(h * F.silu(z))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, d_state]
