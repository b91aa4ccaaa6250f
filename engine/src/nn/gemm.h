// Gemm: the engine's matrix products (private to engine/src), on kernels of its own.
//
// C = op(A) * op(B), or C += op(A) * op(B), on row-major float matrices with leading dimensions.
// Every element of C is the fused multiply-add chain over k, in order:
//
//   c = fma(a[k-1], b[k-1], ... fma(a[1], b[1], fma(a[0], b[0], c0)))    (c0 = 0, or C's value)
//
// so an element comes out bit for bit the same whichever rows and columns the call around it has,
// how many, where it sits among them, how many threads share the product, and whatever the CPU's
// vector width (AVX-512, AVX2 with FMA, or none: the same bits). Data-parallel training relies on
// that: a rank forms some of the rows or columns of one process's product and must get them to
// the last bit (gradient_blocks.h). A BLAS promises nothing of the kind: OpenBLAS 0.3.21 sums
// differently for different row counts and on different CPUs (tests/engine/gemm_test.cpp).
#pragma once

#include <cstdint>

namespace trainingd::engine::internal {

// Below this many multiply-adds a product runs on the calling thread: handing it out to the
// thread team costs more than it saves. Loops around small products use it too (DenseLayer).
inline constexpr double kMinThreadedMacs = 1 << 20;

// C [m x n] = op(A) * op(B), or += with `accumulate`. op(A) is A [m x k], or A^T for A [k x m]
// with `trans_a`; op(B) is B [k x n], or B^T for B [n x k] with `trans_b`. Both transposed is not
// supported. ComputeThreads() threads take rows or columns of C (inside a parallel loop: the
// calling thread alone).
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate = false);

// B [k x n] (row-major, leading dimension ldb) packed once for GemmPackedB, as the kernels read
// it: column panels of PackedBPanel() columns (the last zero-padded), each panel's k rows one
// after another, so a product with few rows of A reads B front to back. PackedBFloats(k, n)
// floats at `packed`, 64-byte aligned. For a product's constant B (a trained dense kernel).
int64_t PackedBPanel();
int64_t PackedBFloats(int64_t k, int64_t n);
void PackB(int64_t k, int64_t n, const float* b, int64_t ldb, float* packed);

// C [m x n] = A [m x k] * B, B as PackB packed it: the same bits as Gemm(false, false, ...) on
// B itself, with the same threads.
void GemmPackedB(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* packed,
                 float* c, int64_t ldc);

// Mixed precision (a job's "precision": "mixed_bfloat16", docs/job-spec.md): C = op(A) * op(B),
// or += with `accumulate`, as Gemm, but with A's and B's values rounded to bfloat16 (to nearest
// even) and k taken two at a time. Every element of C is the chain over the pairs of k, in order,
// of AVX512_BF16's VDPBF16PS step (v16.h): the odd element's product added, then the even one's,
// each sum rounded once to float (a product of bfloat16 values is exact), values below FLT_MIN
// flushed to zero; an odd k ends with a pair (a[k-1], 0).
//
// Like Gemm's, an element's bits do not depend on the shape of the call around it, the threads,
// the CPU or the kernels that compute it (a NaN's payload aside). `scratch`: GemmBf16Floats(m, n,
// k) floats for the rounded operands.
int64_t GemmBf16Floats(int64_t m, int64_t n, int64_t k);
void GemmBf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
              int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, float* scratch,
              bool accumulate = false);

// The kernels that compute GemmBf16's steps, all to the same bits:
//   kInstructions  VDPBF16PS on the operands as bfloat16 pairs (a build for a CPU with
//                  AVX512_BF16);
//   kFloatFma      two float FMAs a pair, the odd element's first, on the operands rounded and
//                  held as floats, with MXCSR's flush-to-zero and denormals-are-zero on: Gemm's
//                  own kernels, at its speed (x86 builds with AVX2 and FMA, or AVX-512);
//   kEmulated      VDPBF16PS's steps written out, lane by lane (the scalar build), slower than
//                  Gemm.
// With AVX512_BF16 the first two are there, and GemmBf16 takes whichever does a pair of products
// faster on this CPU, measured once at first use (in some 0.2 ms).
enum class Bf16Kernels { kInstructions, kFloatFma, kEmulated };
Bf16Kernels GemmBf16Kernels();
// Whether this build has `kernels`.
bool Bf16KernelsAvailable(Bf16Kernels kernels);
// For tests and benchmarks: GemmBf16 uses `kernels` from now on; false, and nothing changes,
// if this build has none such.
bool SetGemmBf16Kernels(Bf16Kernels kernels);
// "AVX512_BF16", "float FMA" or "emulated".
const char* Bf16KernelsName(Bf16Kernels kernels);

// The instruction set the kernels were built for: "avx512", "avx2" or "scalar".
const char* GemmKernels();

}  // namespace trainingd::engine::internal
