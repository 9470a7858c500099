// SPDX-License-Identifier: BSD-3-Clause
// cuBLAS GEMM rates by shape, for the planner's GPU cluster files (calibration of its
// compute model, which charges every matrix product at one rate today).
// The shapes are those of one transformer block on a micro-batch of `tokens` rows at
// hidden size h and tensor-parallel degree t: QKV [tokens, h] x [h, 3h/t], the
// attention projection [tokens, h/t] x [h/t, h], fc [tokens, h] x [h, 4h/t] and the MLP
// projection [tokens, 4h/t] x [4h/t, h]. Each is timed with CUDA events over `iters`
// calls after warm-up, in bf16 (fp32 accumulation) and in fp32 (no TF32), and printed
// as CSV: kind,tokens,h,t,m,n,k,dtype,ms,tflops.
// Build: nvcc -O2 -arch=sm_90 -o gemm_rates gemm_rates.cu -lcublas
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(x)                                                                   \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "gemm_rates: %s: %s\n", #x, cudaGetErrorString(e_));         \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
#define CHECK_BLAS(x)                                                                   \
  do {                                                                                  \
    cublasStatus_t s_ = (x);                                                            \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      std::fprintf(stderr, "gemm_rates: %s: status %d\n", #x, int(s_));                 \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

namespace {
// Milliseconds per C[m, n] = A[m, k] B[k, n] (row-major, as cuBLAS's column-major
// C^T = B^T A^T), median-free: total over `iters` calls / iters.
double time_gemm(cublasHandle_t h, int m, int n, int k, bool bf16, void* a, void* b, void* c, int iters) {
  const float one = 1.0f, zero = 0.0f;
  const cudaDataType t = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute = bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_PEDANTIC;
  auto call = [&] {
    CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, t, n, a, t, k, &zero, c, t, n, compute,
                            CUBLAS_GEMM_DEFAULT));
  };
  for (int i = 0; i < 3; ++i) call();
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < iters; ++i) call();
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return double(ms) / iters;
}
}  // namespace

int main() {
  const int tokens_list[] = {2048, 8192};
  const int hidden_list[] = {1024, 2048, 4096, 8192, 12288};
  const int tp_list[] = {1, 2, 4, 8};
  const std::size_t max_elems = std::size_t(8192) * 4 * 12288;  // the largest operand
  void *a, *b, *c;
  CHECK_CUDA(cudaMalloc(&a, max_elems * 4));
  CHECK_CUDA(cudaMalloc(&b, max_elems * 4));
  CHECK_CUDA(cudaMalloc(&c, max_elems * 4));
  CHECK_CUDA(cudaMemset(a, 0, max_elems * 4));  // zeros: rates do not depend on values here
  CHECK_CUDA(cudaMemset(b, 0, max_elems * 4));
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("# device %s, sm_%d%d, %.1f GiB\n", prop.name, prop.major, prop.minor,
              double(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  std::printf("kind,tokens,h,t,m,n,k,dtype,ms,tflops\n");
  for (int tokens : tokens_list)
    for (int hid : hidden_list)
      for (int t : tp_list) {
        struct Shape {
          const char* kind;
          int m, n, k;
        } shapes[] = {{"qkv", tokens, 3 * hid / t, hid},
                      {"attn_proj", tokens, hid, hid / t},
                      {"fc", tokens, 4 * hid / t, hid},
                      {"mlp_proj", tokens, hid, 4 * hid / t}};
        for (const auto& s : shapes)
          for (bool bf16 : {true, false}) {
            const double flops = 2.0 * s.m * s.n * s.k;
            const int iters = flops > 1e12 ? 5 : 20;
            const double ms = time_gemm(h, s.m, s.n, s.k, bf16, a, b, c, iters);
            std::printf("%s,%d,%d,%d,%d,%d,%d,%s,%.4f,%.1f\n", s.kind, tokens, hid, t, s.m, s.n, s.k,
                        bf16 ? "bf16" : "fp32", ms, flops / (ms * 1e-3) / 1e12);
          }
      }
  CHECK_BLAS(cublasDestroy(h));
  return 0;
}
