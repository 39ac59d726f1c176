"""A 2-layer bidirectional LSTM over 512 steps (bench/loops.py): KernelBench level 3's
LSTMBidirectional at its own sizes, with a shorter sequence."""
import torch

batch_size = 10
sequence_length = 512
input_size = 128
hidden_size = 256
num_layers = 2


class Model(torch.nn.Module):
    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.lstm = torch.nn.LSTM(input_size, hidden_size, num_layers, batch_first=True,
                                  bidirectional=True)
        self.fc = torch.nn.Linear(2 * hidden_size, 10)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :])


def get_inputs():
    return [torch.randn(batch_size, sequence_length, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
