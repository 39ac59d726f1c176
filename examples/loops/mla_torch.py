"""The PyTorch twin of mla.py: the same tensors, by the same names, as forward arguments; it
returns the loop program's outputs in their declaration order (c_kv, v, scores)."""
import torch
import torch.nn as nn

B, S = 1, 1024
DM, DC = 2048, 512
H, DH = 16, 128


class Model(nn.Module):
    def forward(self, x, W_dkv, W_uk, W_uv, W_q):
        b, s, _ = x.shape
        dc, h, dh = W_uk.shape
        c_kv = x @ W_dkv
        k = (c_kv @ W_uk.reshape(dc, h * dh)).view(b, s, h, dh)
        v = (c_kv @ W_uv.reshape(dc, h * dh)).view(b, s, h, dh)
        q = (x @ W_q.reshape(-1, h * dh)).view(b, s, h, dh)
        scores = q.transpose(1, 2) @ k.permute(0, 2, 3, 1)
        return c_kv, v, scores


def get_inputs():
    return [torch.randn(B, S, DM, dtype=torch.bfloat16),
            torch.randn(DM, DC, dtype=torch.bfloat16),
            torch.randn(DC, H, DH, dtype=torch.bfloat16),
            torch.randn(DC, H, DH, dtype=torch.bfloat16),
            torch.randn(DM, H, DH, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
