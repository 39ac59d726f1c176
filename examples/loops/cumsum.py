"""A prefix sum along the rows of a matrix, y[b, i] = x[b, 0] + ... + x[b, i], in the loop
language as a recurrence: each element is the one before it plus x (docs/loop-language.md,
"Recurrences"):

    y[b, 0] = x[b, 0]
    y[b, i] = y[b, i - 1] + x[b, i]        for i >= 1

The second nest reads what it writes one step before along i, so it is lifted to one repeat
op of N - 1 steps whose step adds a column: B(N - 1) additions in all, linear in N. (Written
as a triangular reduction, `for j in range(i + 1): y[b, i] += x[b, j]`, the same prefix sum
would count B N (N + 1) / 2 points.) torch.cumsum, the twin, counts B N additions: its scan
adds the first element of each row to 0.

Sizes: 256 rows of 8,192 fp32 values.

    solar analyze examples/loops/cumsum.py --arch H100_SXM
    solar validate examples/loops/cumsum.py --reference examples/loops/cumsum_torch.py --set B=4 --set N=64
"""
from solar.loopir import Tensor, kernel

B, N = 256, 8192
x = Tensor("B, N", role="input")
y = Tensor("B, N", role="output")


@kernel
def cumsum(x, y):
    for b in range(B):
        y[b, 0] = x[b, 0]                                # the first column
    for b in range(B):
        for i in range(N):
            if i >= 1:
                y[b, i] = y[b, i - 1] + x[b, i]          # one step after the other along i


def model():
    cumsum(x, y)
