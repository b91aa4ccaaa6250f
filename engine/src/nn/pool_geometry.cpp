#include "nn/pool_geometry.h"

#include <string>

namespace trainingd::engine {

Result<Shape> ConfigurePool(const char* type, const Shape& input, int pool, int stride,
                            PoolGeometry* g) {
  if (input.rank() != 3) {
    return Status::InvalidArgument(std::string(type) +
                                   " expects an input of shape [height,width,channels], got " +
                                   input.ToString());
  }
  if (pool <= 0 || stride <= 0 || pool > 64 || stride > 64) {
    return Status::InvalidArgument("pool and stride must be in [1, 64], got pool " +
                                   std::to_string(pool) + ", stride " + std::to_string(stride));
  }
  g->h = input[0];
  g->w = input[1];
  g->c = input[2];
  if (pool > g->h || pool > g->w) {
    return Status::InvalidArgument("pool " + std::to_string(pool) + " is larger than the input " +
                                   input.ToString());
  }
  g->oh = (g->h - pool) / stride + 1;
  g->ow = (g->w - pool) / stride + 1;
  return Shape{g->oh, g->ow, g->c};
}

}  // namespace trainingd::engine
