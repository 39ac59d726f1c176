// Softmax of every row of a [batch, dim] fp32 matrix: one thread per row, three passes over
// the row (its max, the exponentials and their sum, the division).
#include <cuda_runtime.h>
#include <math.h>

constexpr int batch = 4096;
constexpr int dim = 1000;

__global__ void row_softmax(const float* __restrict__ x, float* __restrict__ y, int rows,
                            int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + (size_t)r * cols;
  float* yr = y + (size_t)r * cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) {
    float e = expf(xr[c] - m);
    yr[c] = e;
    s += e;
  }
  float inv = 1.0f / s;
  for (int c = 0; c < cols; ++c) yr[c] *= inv;
}

void launch_row_softmax(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  int threads = 128;
  row_softmax<<<(rows + threads - 1) / threads, threads, 0, stream>>>(x, y, rows, cols);
}
