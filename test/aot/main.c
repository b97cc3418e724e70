/* Uses the kernel tiledsl-aot generated, with only the CUDA driver: no tiledsl, no LLVM. Adds two
 * vectors of random values and compares with the exact sum (the JIT's result is exact too:
 * examples/add.cpp checks it with max_err = 0). Exits 77 where no GPU can be used. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "add_kernel.h"

#define CHECK(call)                                                        \
  do {                                                                     \
    CUresult r_ = (call);                                                  \
    if (r_ != CUDA_SUCCESS) {                                              \
      const char* name_ = "?";                                             \
      cuGetErrorName(r_, &name_);                                          \
      fprintf(stderr, "%s failed: %s\n", #call, name_);                    \
      return 1;                                                            \
    }                                                                      \
  } while (0)

int main(void) {
  enum { N = 1000000 }; /* a multiple of 16, as the specialisation needs */
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS) {
    printf("aot: no GPU can be used: skipped\n");
    return 77;
  }
  CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
  float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
  unsigned s = 12345;
  for (int i = 0; i < N; ++i) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
    s = s * 1664525u + 1013904223u;
    y[i] = (float)(s >> 8) / 16777216.0f * 3.0f;
  }
  CUdeviceptr dx, dy, dout;
  CHECK(cuMemAlloc(&dx, N * sizeof(float)));
  CHECK(cuMemAlloc(&dy, N * sizeof(float)));
  CHECK(cuMemAlloc(&dout, N * sizeof(float)));
  CHECK(cuMemcpyHtoD(dx, x, N * sizeof(float)));
  CHECK(cuMemcpyHtoD(dy, y, N * sizeof(float)));
  CHECK(cuMemsetD8(dout, 0xff, N * sizeof(float)));
  CHECK(add_kernel_launch(NULL, (N + 1023) / 1024, 1, 1, dx, dy, dout, N));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(out, dout, N * sizeof(float)));
  int bad = 0;
  for (int i = 0; i < N; ++i)
    if (out[i] != x[i] + y[i] && bad++ < 5) printf("aot: index %d: got %g, want %g\n", i, out[i], x[i] + y[i]);
  /* The launcher refuses arguments that break the specialisation. */
  if (add_kernel_launch(NULL, 1, 1, 1, dx, dy, dout, N + 1) != CUDA_ERROR_INVALID_VALUE) {
    printf("aot: n = N + 1 (not a multiple of 16) was accepted\n");
    bad++;
  }
  printf("aot: %s (%d elements, %d wrong)\n", bad ? "FAIL" : "OK", N, bad);
  return bad ? 1 : 0;
}
