"""One step of an LSTM cell: gates i, f, g, o from the input and the previous state (level 3:
recurrent network)."""
import torch
import torch.nn as nn

batch_size = 32
input_size = 256
hidden_size = 512


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden_size)

    def forward(self, x, h, c):
        return self.cell(x, (h, c))


def get_inputs():
    return [torch.randn(batch_size, input_size), torch.randn(batch_size, hidden_size),
            torch.randn(batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size]
