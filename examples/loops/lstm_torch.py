"""The PyTorch twin of lstm.py: one LSTM layer (torch.lstm, what nn.LSTM calls) with the same
tensors, by the same names, as forward arguments; it returns the hidden state of every step."""
import torch
import torch.nn as nn

T, B, I, H = 64, 16, 512, 512


class Model(nn.Module):
    def forward(self, x, w_ih, b_ih, b_hh, h0, c0, w_hh):
        out, _, _ = torch.lstm(x, (h0.unsqueeze(0), c0.unsqueeze(0)), (w_ih, w_hh, b_ih, b_hh),
                               True, 1, 0.0, False, False, False)
        return out


def get_inputs():
    s = H ** -0.5
    return [torch.randn(T, B, I), torch.randn(4 * H, I) * s, torch.randn(4 * H) * s,
            torch.randn(4 * H) * s, torch.randn(B, H), torch.randn(B, H),
            torch.randn(4 * H, H) * s]


def get_init_inputs():
    return []
