// What the store's writer and readers share about scalars (private to daemon/src): how a series
// is found, and the rollup geometry.
//
// Points are keyed by (series_id, step), series_id naming a (job, tag) in the series table.
// Rollups: for every series and level l in 1..kRollupLevels, scalar_rollups holds one row per
// non-empty block of 16^l steps (block = step >> 4l) with the block's min and max value and its
// last point. A level-l block is exactly 16 level-(l-1) blocks (level 0 = the raw points), so a
// range of steps is covered by a few partial blocks at each level plus whole blocks at one level;
// a downsampled query reads O(16 * max_points) rows instead of every point.
#pragma once

#include <cstdint>

namespace trainingd::daemon {

// A (job, tag)'s series id, if it has one.
inline constexpr char kFindSeries[] = "SELECT id FROM series WHERE job_id = ?1 AND tag = ?2";

inline constexpr int kRollupLevels = 7;  // block widths 16, 256, ..., 16^7 = 268,435,456 steps
inline constexpr int RollupShift(int level) { return 4 * level; }
// Floor division by 16^level (C++20 defines >> on negative values as arithmetic).
inline constexpr int64_t RollupBlock(int64_t step, int level) { return step >> RollupShift(level); }

}  // namespace trainingd::daemon
