// CRC-32C (Castagnoli): reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF,
// as TFRecord framing and our checkpoint files use it. crc32c("123456789") = 0xE3069283.
// Private to engine/src.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trainingd::engine::internal {

uint32_t Crc32c(const void* data, size_t size);
// Continues `crc` (a previous Crc32c result) over more bytes: Crc32c(a+b) == Extend(Crc32c(a), b).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);
// The same from a table, a byte at a time: what Crc32cExtend computes on a CPU without SSE4.2's
// CRC32 instruction (it uses the instruction where the CPU has it). For tests.
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t size);

}  // namespace trainingd::engine::internal
