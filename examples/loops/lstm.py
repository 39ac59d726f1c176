"""One LSTM layer over a sequence (torch.nn.LSTM's equations, docs: the input, forget, cell
and output gates i f g o), in the loop language as a recurrence over time
(docs/loop-language.md, "Recurrences"):

    gates[t]  = x[t] W_ih^T + b_ih + h[t] W_hh^T + b_hh        (i f g o, H each)
    c[t + 1]  = sigmoid(f) c[t] + sigmoid(i) tanh(g)
    h[t + 1]  = sigmoid(o) tanh(c[t + 1])

with the input projection of every step at once (a contraction, then both biases), then a
step loop around three nests, the cell of one step — the hidden projection, the cell state,
the hidden state — which read h and c one step before. The three additions per gate value
(x W_ih^T + b_ih + b_hh + h W_hh^T) are the twin's (its addmm adds b_ih, then b_hh, then the
two projections). The step loop is lifted to one repeat op of T steps, so the
work is T times one cell: 4 B H H MACs, 11 B H vector FLOPs (4 gate sums, 3 sigmoids' adds,
3 for c, 1 for h) and 8 B H special functions (a sigmoid is an exp and a reciprocal,
docs/cost.md), beside the input projection of all steps: 4 T B H I MACs and 8 T B H adds.
h[0] and c[0] are the initial states; y is h[1:].

Sizes: 64 steps of a batch of 16, 512 inputs and 512 hidden units, in fp32.

    solar analyze examples/loops/lstm.py --arch H100_SXM
    solar validate examples/loops/lstm.py --reference examples/loops/lstm_torch.py --set T=6 --set B=2 --set I=8 --set H=8
"""
from solar.loopir import Tensor, kernel, sigmoid, tanh

T, B, I, H = 64, 16, 512, 512
x = Tensor("T, B, I", role="input")
w_ih = Tensor("4 * H, I", role="weight")
b_ih = Tensor("4 * H", role="weight")
b_hh = Tensor("4 * H", role="weight")
h0 = Tensor("B, H", role="input")
c0 = Tensor("B, H", role="input")
w_hh = Tensor("4 * H, H", role="weight")
y = Tensor("T, B, H", role="output")


@kernel
def lstm(x, w_ih, b_ih, b_hh, h0, c0, w_hh, y):
    xw = Tensor("T, B, 4 * H")                           # x W_ih^T, every step at once
    gx = Tensor("T, B, 4 * H")                           # ... + b_ih + b_hh
    hw = Tensor("T, B, 4 * H")                           # h W_hh^T, one step at a time
    h = Tensor("T + 1, B, H")
    c = Tensor("T + 1, B, H")
    for t in range(T):
        for b in range(B):
            for n in range(4 * H):
                for k in range(I):
                    xw[t, b, n] += x[t, b, k] * w_ih[n, k]
    for t in range(T):
        for b in range(B):
            for n in range(4 * H):
                gx[t, b, n] = xw[t, b, n] + b_ih[n] + b_hh[n]
    for b in range(B):
        for n in range(H):
            h[0, b, n] = h0[b, n]
    for b in range(B):
        for n in range(H):
            c[0, b, n] = c0[b, n]
    for t in range(T):                                   # the step loop: one cell per step
        for b in range(B):
            for n in range(4 * H):
                for k in range(H):
                    hw[t, b, n] += h[t, b, k] * w_hh[n, k]
        for b in range(B):
            for n in range(H):
                i = sigmoid(hw[t, b, n] + gx[t, b, n])
                f = sigmoid(hw[t, b, H + n] + gx[t, b, H + n])
                g = tanh(hw[t, b, 2 * H + n] + gx[t, b, 2 * H + n])
                c[t + 1, b, n] = f * c[t, b, n] + i * g
        for b in range(B):
            for n in range(H):
                o = sigmoid(hw[t, b, 3 * H + n] + gx[t, b, 3 * H + n])
                h[t + 1, b, n] = o * tanh(c[t + 1, b, n])
    for t in range(T):
        for b in range(B):
            for n in range(H):
                y[t, b, n] = h[t + 1, b, n]


def model():
    lstm(x, w_ih, b_ih, b_hh, h0, c0, w_hh, y)
