// y = relu(x @ w + b) in fp32: one thread per output element, a naive GEMM with its bias and
// activation fused into the epilogue.
#include <cuda_runtime.h>

constexpr int M = 2048;  // rows of x and y
constexpr int K = 1024;  // columns of x, rows of w
constexpr int N = 4096;  // columns of w and y

__global__ void gemm_bias_relu(const float* __restrict__ x, const float* __restrict__ w,
                               const float* __restrict__ b, float* __restrict__ y, int m,
                               int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += x[row * k + i] * w[i * n + col];
  acc += b[col];
  y[row * n + col] = acc > 0.0f ? acc : 0.0f;
}

void launch_gemm_bias_relu(const float* x, const float* w, const float* b, float* y, int m,
                           int n, int k, cudaStream_t stream) {
  dim3 block(16, 16);
  dim3 grid((n + block.x - 1) / block.x, (m + block.y - 1) / block.y);
  gemm_bias_relu<<<grid, block, 0, stream>>>(x, w, b, y, m, n, k);
}
