// SmallFileSystem: a size-limited file system (a tmpfs) for tests that need a real full disk --
// writes that fail with ENOSPC, partly written files -- rather than a simulated one.
//
// Mounting needs CAP_SYS_ADMIN (root, as the tests run in CI); where the kernel refuses, Mount
// returns null and says why, and the test skips naming that reason rather than passing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace trainingd::test_support {

class SmallFileSystem {
 public:
  // Creates `dir` and mounts a tmpfs of `bytes` (rounded up to pages) on it. Null, with
  // `*why_not` set, when that is not possible.
  static std::unique_ptr<SmallFileSystem> Mount(const std::string& dir, int64_t bytes,
                                                std::string* why_not);
  // Unmounts (detached: descriptors still open do not keep it busy) and removes the directory.
  ~SmallFileSystem();
  SmallFileSystem(const SmallFileSystem&) = delete;
  SmallFileSystem& operator=(const SmallFileSystem&) = delete;

  const std::string& dir() const { return dir_; }
  // Takes the free space with a filler file (dir/filler), leaving `leave` bytes (rounded down to
  // pages) free -- fewer if others write meanwhile. Replaces an earlier filler. False when the
  // filler cannot be allocated.
  bool Fill(int64_t leave = 0);
  // Deletes the filler: its space is free again.
  void Unfill();
  // Bytes free now.
  int64_t FreeBytes() const;

 private:
  explicit SmallFileSystem(std::string dir) : dir_(std::move(dir)) {}
  std::string filler() const { return dir_ + "/filler"; }

  std::string dir_;
};

}  // namespace trainingd::test_support
