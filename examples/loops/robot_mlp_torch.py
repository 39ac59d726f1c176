"""The PyTorch twin of robot_mlp.py: the same tensors, by the same names, as forward arguments
(the hidden layers' weights stacked in W_h, b_h)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1
OBS, HID, ACT = 64, 256, 12
L = 2


class Model(nn.Module):
    def forward(self, state, W_in, b_in, W_h, b_h, W_out, b_out):
        h = F.relu(F.linear(state, W_in, b_in))
        for l in range(W_h.shape[0]):
            h = F.relu(F.linear(h, W_h[l], b_h[l]))
        return torch.tanh(F.linear(h, W_out, b_out))


def get_inputs():
    return [torch.randn(BATCH, OBS), torch.randn(HID, OBS) / OBS ** 0.5, torch.randn(HID),
            torch.randn(L, HID, HID) / HID ** 0.5, torch.randn(L, HID),
            torch.randn(ACT, HID) / HID ** 0.5, torch.randn(ACT)]


def get_init_inputs():
    return []
