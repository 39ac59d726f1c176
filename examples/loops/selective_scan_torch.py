"""The PyTorch twin of selective_scan.py: mamba_ssm's selective_scan_ref (without D, z and the
softplus of delta) with the same tensors, by the same names, as forward arguments. The state
is updated in a Python loop over the sequence, as the reference does, so the capture records
each step."""
import torch
import torch.nn as nn

B, L, D, N = 2, 256, 1024, 16


class Model(nn.Module):
    def forward(self, delta, A, Bm, u, Cm):
        dA = torch.exp(delta.unsqueeze(-1) * A)                         # (B, L, D, N)
        dBu = delta.unsqueeze(-1) * Bm.unsqueeze(2) * u.unsqueeze(-1)   # (B, L, D, N)
        h = delta.new_zeros(delta.shape[0], delta.shape[2], A.shape[1])
        ys = []
        for l in range(delta.shape[1]):
            h = dA[:, l] * h + dBu[:, l]
            ys.append(torch.bmm(h, Cm[:, l].unsqueeze(-1)).squeeze(-1))
        return torch.stack(ys, dim=1)


def get_inputs():
    return [torch.rand(B, L, D) * 0.1, -torch.rand(D, N), torch.randn(B, L, N),
            torch.randn(B, L, D), torch.randn(B, L, N)]


def get_init_inputs():
    return []
