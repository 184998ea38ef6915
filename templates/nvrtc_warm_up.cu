// What tlc compiles on a thread before a process's first real compile (runtime/compile.py,
// warm_up_nvrtc): NVRTC's start-up, the fp16/bf16 headers generated code includes, and code
// for ptxas, so that the kernel's compile finds them warm.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void tl_warm_up(__half* x, __nv_bfloat16* y) {
  x[threadIdx.x] = __hadd(x[threadIdx.x], __float2half(__bfloat162float(y[threadIdx.x])));
}
