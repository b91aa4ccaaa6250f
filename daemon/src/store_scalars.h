// What the store's writer and readers share about scalars (private to daemon/src): the rollup
// geometry and the statements both sides run.
//
// Rollups: for every series (job, tag) and level l in 1..kRollupLevels, scalar_rollups holds one
// row per non-empty block of 16^l steps (block = step >> 4l) with the block's min and max value
// and its last point. A level-l block is exactly 16 level-(l-1) blocks (level 0 = the raw
// points), so a range of steps is covered by a few partial blocks at each level plus whole blocks
// at one level; a downsampled query reads O(16 * max_points) rows instead of every point.
#pragma once

#include <cstdint>

namespace trainingd::daemon {

inline constexpr int kRollupLevels = 7;  // block widths 16, 256, ..., 16^7 = 268,435,456 steps
inline constexpr int RollupShift(int level) { return 4 * level; }
// Floor division by 16^level (C++20 defines >> on negative values as arithmetic).
inline constexpr int64_t RollupBlock(int64_t step, int level) { return step >> RollupShift(level); }

// The job's tags in order, one row each, found by skipping through the primary key (one index
// seek per tag, never a scan of the points). ?1 = job id.
inline constexpr char kScalarTagsSql[] = R"sql(
WITH RECURSIVE tags(tag) AS (
  SELECT (SELECT tag FROM scalars WHERE job_id = ?1 ORDER BY tag LIMIT 1)
  UNION ALL
  SELECT (SELECT s.tag FROM scalars AS s WHERE s.job_id = ?1 AND s.tag > tags.tag
          ORDER BY s.tag LIMIT 1)
  FROM tags WHERE tags.tag IS NOT NULL)
SELECT tag FROM tags WHERE tag IS NOT NULL)sql";

}  // namespace trainingd::daemon
