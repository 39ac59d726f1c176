"""Recurrent layers (KernelBench format): a two-layer bidirectional batch-first LSTM, a
GRU on its output and a one-layer tanh RNN, each with an initial state.

solar analyze examples/torch/recurrent.py --arch H100_SXM --set seq_len=128
"""

import torch
import torch.nn as nn

batch_size = 3
seq_len = 6
input_size = 10
hidden = 12
gru_hidden = 8
rnn_hidden = 5
lstm_layers = 2


class Model(nn.Module):
    def __init__(self, input_size, hidden, gru_hidden, rnn_hidden, lstm_layers):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden, num_layers=lstm_layers, bidirectional=True,
                            batch_first=True)
        self.gru = nn.GRU(2 * hidden, gru_hidden, batch_first=True)
        self.rnn = nn.RNN(gru_hidden, rnn_hidden)  # time-major

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        z, hz = self.gru(y)
        r, hr = self.rnn(z.transpose(0, 1))
        return r, h, c, hz, hr


def get_inputs():
    return [
        torch.randn(batch_size, seq_len, input_size),
        torch.randn(2 * lstm_layers, batch_size, hidden),
        torch.randn(2 * lstm_layers, batch_size, hidden),
    ]


def get_init_inputs():
    return [input_size, hidden, gru_hidden, rnn_hidden, lstm_layers]
