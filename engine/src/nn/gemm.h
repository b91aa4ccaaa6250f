// Gemm: the engine's one entry to matrix products (private to engine/src).
//
// C = alpha * op(A) * op(B) + beta * C on row-major float matrices with leading dimensions,
// computed by OpenBLAS (OpenMP build). Called outside a parallel region it uses ComputeThreads()
// threads; called inside a ParallelFor/ParallelChunks body it runs on the calling thread only.
#pragma once

#include <cstdint>

namespace trainingd::engine::internal {

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace trainingd::engine::internal
