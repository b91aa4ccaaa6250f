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

// Gemm on the calling thread alone, whatever the thread count: for the products that sum over a
// block of examples (GradientBlocks), whose results must not depend on the threads (OpenBLAS's
// threaded driver cuts k into other blocks than its single-threaded one; see GemmRows).
void GemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc);

// C = A * op(B) for products whose rows are independent (one example, or one output pixel, per
// row), such that each row of C comes out bit for bit the same however many rows there are and
// whichever row it is: a data-parallel rank computes some of the rows of one process's product,
// and must get them to the last bit (gradient_blocks.h).
//
// Gemm does not promise that. OpenBLAS (0.3.21, AVX-512 kernels) picks its kernel by the size of
// the product: row-major NN products under 28 * 512^2 multiply-adds go to a "direct" kernel, and
// products under 100^3 to a "small matrix" kernel that sums differently for different numbers of
// rows; and its threaded driver cuts k into other blocks than its single-threaded one. Its
// regular packed kernels, single-threaded, sum every element over k in the same order whatever m
// and n are. So GemmRows calls the column-major interface (the direct kernel is row-major only)
// on one thread per call, gives threads rows or columns of C, and pads a small product with zero
// rows until it is past the small kernel's limit (tests/engine/gemm_test.cpp checks the promise).
void GemmRows(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
              const float* b, int64_t ldb, float* c, int64_t ldc);
// The fewest rows for which GemmRows runs an n x k product without padding it.
int64_t GemmRowsUnpadded(int64_t n, int64_t k);

// The name of the kernels OpenBLAS runs on this CPU ("SkylakeX", "Haswell", ...): benchmarks
// print it beside their numbers.
const char* BlasCore();

}  // namespace trainingd::engine::internal
