#include "trainingd/engine/base/parallel.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__SSE__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

namespace trainingd::engine {
namespace {

// How long an idle thread of a team looks for work before it sleeps, and how long a caller waits
// for another thread's chunk before it does. A step's loops follow each other within microseconds
// to a millisecond, and waking a sleeping thread costs tens of microseconds on a virtual machine
// (a CNN step at 2 threads ran 4% slower when the team slept after 50 us). So: 10 us of pause
// instructions, then checks that yield the core each time (to whoever else wants it: the spinner
// does not hold a core from another program, or from a thread of ours it displaced), up to 1 ms.
constexpr auto kPauseFor = std::chrono::microseconds(10);
constexpr auto kSpinFor = std::chrono::microseconds(1000);
// The most compute threads a thread may ask for (a team's chunk count fits in 16 bits).
constexpr int kMaxComputeThreads = 1024;

// Sleeps while *word == expected (or until a spurious wake-up); Wake wakes every sleeper. Raw
// futexes: the waits of std::atomic in GCC 12's libstdc++ missed wake-ups here.
void FutexWait(std::atomic<uint32_t>& word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}
void FutexWake(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}
static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free);

void CpuRelax() {
#if defined(__SSE__)
  _mm_pause();
#endif
}

// Spins until `done()` or kSpinFor has passed; true if done.
template <typename Done>
bool SpinUntil(Done&& done) {
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    if (i % 16 != 0) {
      CpuRelax();
      continue;
    }
    const auto spun = std::chrono::steady_clock::now() - start;
    if (spun >= kSpinFor) return done();
    if (spun >= kPauseFor) sched_yield();
  }
}

// The helper threads of one calling thread. Run() hands out `chunks` chunks one at a time: the
// helpers and the caller each take the next one until none is left, so the caller never waits for
// a helper that has not started (one the scheduler has not run, on a machine shared with other
// programs); it waits only for chunks a helper is still working on. Who runs a chunk does not
// change what it computes, so results depend on the chunk count alone.
class Team {
 public:
  explicit Team(int helpers) {
    threads_.reserve(static_cast<size_t>(helpers));
    for (int i = 0; i < helpers; ++i) threads_.emplace_back([this] { HelperLoop(); });
  }

  ~Team() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    FutexWake(generation_);
    for (std::thread& t : threads_) t.join();
  }

  int helpers() const { return static_cast<int>(threads_.size()); }

  void Run(int chunks, void (*call)(void*, int), void* ctx) {
    call_ = call;
    ctx_ = ctx;
    remaining_.store(static_cast<uint32_t>(chunks), std::memory_order_relaxed);
    const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
    // Publishes call_, ctx_ and remaining_ with the claim word (release), then wakes sleepers.
    claims_.store(Pack(gen, chunks, 0), std::memory_order_release);
    // seq_cst with the helpers' sleeping_ increment and generation_ load: either this sees a
    // sleeper and wakes it, or the sleeper sees this generation and does not sleep.
    generation_.store(gen, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) FutexWake(generation_);
    RunChunks(gen);
    // The chunks helpers took and have not finished.
    if (!SpinUntil([&] { return remaining_.load(std::memory_order_acquire) == 0; })) {
      caller_sleeping_.store(1, std::memory_order_seq_cst);
      for (uint32_t left = remaining_.load(std::memory_order_seq_cst); left != 0;
           left = remaining_.load(std::memory_order_seq_cst)) {
        FutexWait(remaining_, left);
      }
      caller_sleeping_.store(0, std::memory_order_relaxed);
    }
  }

 private:
  // The claim word: generation (32 bits), chunk count (16) and the next chunk to take (16).
  static uint64_t Pack(uint32_t gen, int chunks, int next) {
    return (uint64_t{gen} << 32) | (static_cast<uint64_t>(chunks) << 16) |
           static_cast<uint64_t>(next);
  }

  // Takes and runs chunks of generation `gen` until none is left.
  void RunChunks(uint32_t gen) {
    uint64_t word = claims_.load(std::memory_order_acquire);
    for (;;) {
      const int chunks = static_cast<int>((word >> 16) & 0xFFFF);
      const int next = static_cast<int>(word & 0xFFFF);
      if (static_cast<uint32_t>(word >> 32) != gen || next >= chunks) return;
      if (!claims_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
        continue;
      }
      call_(ctx_, next);
      // seq_cst with the caller's caller_sleeping_ store and remaining_ load, as in Run().
      if (remaining_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
          caller_sleeping_.load(std::memory_order_seq_cst) != 0) {
        FutexWake(remaining_);
      }
      word = claims_.load(std::memory_order_acquire);
    }
  }

  void HelperLoop() {
    FlushDenormalsOnThisThread();
    // The generation the team started with: a helper the scheduler starts late (after Run()s,
    // or after ~Team()) still sees every change since.
    uint32_t seen = 0;
    for (;;) {
      if (!SpinUntil([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
        sleeping_.fetch_add(1, std::memory_order_seq_cst);
        // Looked at again after announcing the sleep: a Run() that missed the announcement
        // published its generation before this load.
        while (generation_.load(std::memory_order_seq_cst) == seen) FutexWait(generation_, seen);
        sleeping_.fetch_sub(1, std::memory_order_relaxed);
      }
      // The generation first: the one ~Team() makes comes after stop_ is set.
      seen = generation_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) return;
      RunChunks(seen);
    }
  }

  std::vector<std::thread> threads_;
  std::atomic<uint32_t> generation_{0};  // a new Run(), or stop
  std::atomic<uint64_t> claims_{0};
  std::atomic<uint32_t> remaining_{0};        // chunks of the current Run() not finished
  std::atomic<uint32_t> caller_sleeping_{0};  // the caller waits on remaining_
  std::atomic<int> sleeping_{0};              // helpers waiting on generation_
  std::atomic<bool> stop_{false};
  void (*call_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
};

thread_local int t_threads = 1;
// On a team's thread, or in the caller while its team runs: loops started here run inline.
thread_local bool t_in_parallel = false;
thread_local std::unique_ptr<Team> t_team;

// An exception may not leave a helper thread (the process would terminate), so each chunk's is
// caught and the first one rethrown on the calling thread once every chunk is done: std::bad_alloc
// from a chunk's buffer then reaches the job's own exception boundary.
class FirstException {
 public:
  template <typename Fn>
  void Run(Fn&& fn) {
    try {
      fn();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
  void Rethrow() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr error_;
};

// Runs body(c) for c in [0, chunks) on the calling thread's team.
template <typename Body>
void RunOnTeam(int chunks, Body&& body) {
  if (!t_team || t_team->helpers() != t_threads - 1) {
    t_team.reset();
    t_team = std::make_unique<Team>(t_threads - 1);
  }
  FirstException error;
  struct Ctx {
    Body* body;
    FirstException* error;
  } ctx{&body, &error};
  auto call = [](void* p, int c) {
    auto* x = static_cast<Ctx*>(p);
    const bool outer = t_in_parallel;
    t_in_parallel = true;
    x->error->Run([&] { (*x->body)(c); });
    t_in_parallel = outer;
  };
  t_team->Run(chunks, call, &ctx);
  error.Rethrow();
}

}  // namespace

void FlushDenormalsOnThisThread() {
#if defined(__SSE__)
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

void SetComputeThreads(int n) {
  t_threads = std::clamp(n, 1, kMaxComputeThreads);
  FlushDenormalsOnThisThread();
}

int ComputeThreads() { return t_in_parallel ? 1 : t_threads; }

int NumChunks(int64_t n, int64_t min_parallel) {
  return NumChunks(n, min_parallel, ComputeThreads());
}

int NumChunks(int64_t n, int64_t min_parallel, int threads) {
  if (threads <= 1 || n < min_parallel || n < 2) return 1;
  return static_cast<int>(std::min<int64_t>(threads, n));
}

namespace internal {

void ParallelChunksImpl(int64_t n, int chunks, void (*call)(void*, int, int64_t, int64_t),
                        void* ctx) {
  RunOnTeam(chunks, [&](int c) {
    const int64_t begin = n * c / chunks;
    const int64_t end = n * (c + 1) / chunks;
    if (begin < end) call(ctx, c, begin, end);
  });
}

void ParallelForImpl(int64_t n, int threads, void (*call)(void*, int64_t, int64_t), void* ctx) {
  const int t = static_cast<int>(std::min<int64_t>(threads, n));
  RunOnTeam(t, [&](int c) {
    const int64_t begin = n * c / t;
    const int64_t end = n * (c + 1) / t;
    if (begin < end) call(ctx, begin, end);
  });
}

}  // namespace internal

}  // namespace trainingd::engine
