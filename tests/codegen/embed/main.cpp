// Embedding a tlc-generated kernel in a C++ program: call the launcher with device pointers,
// the shape sizes and a stream, then compare with a CPU reference.  Exit code 0 when it agrees.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include "vector_add.h"

int main() {
  const int n = 3000;  // not a multiple of the block: the ragged tail must be handled
  std::vector<float> x(n), y(n), out(n, -1.0f);
  for (int i = 0; i < n; ++i) { x[i] = 0.001f * i - 1.0f; y[i] = std::sin(0.01f * i); }
  float *dx, *dy, *dout;
  if (cudaMalloc(&dx, n * 4) || cudaMalloc(&dy, n * 4) || cudaMalloc(&dout, n * 4)) {
    std::printf("no CUDA device\n");
    return 2;
  }
  cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y.data(), n * 4, cudaMemcpyHostToDevice);
  cudaError_t err = launch_vector_add(dx, dy, dout, 2.5f, n, 0);
  if (err != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("launch failed: %s\n", cudaGetErrorString(err));
    return 1;
  }
  cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (int i = 0; i < n; ++i) worst = std::fmax(worst, std::fabs(out[i] - (2.5f * x[i] + y[i])));
  std::printf("max abs error %g\n", worst);
  return worst < 1e-5 ? 0 : 1;
}
