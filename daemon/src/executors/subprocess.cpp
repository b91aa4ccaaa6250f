#include "executors/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include "trainingd/engine/base/format.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;

eng::Result<Child> Spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) {
    return eng::Status::IoError("pipe: " + std::string(strerror(errno)));
  }
  if (::pipe2(out, O_CLOEXEC) != 0) {
    for (int fd : {in[0], in[1]}) ::close(fd);
    return eng::Status::IoError("pipe: " + std::string(strerror(errno)));
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    return eng::Status::IoError("pipe: " + std::string(strerror(errno)));
  }
  // A pipe for exec's failure: closed by a successful exec (CLOEXEC), else it carries errno.
  int exec_err[2];
  if (::pipe2(exec_err, O_CLOEXEC) != 0) {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
    return eng::Status::IoError("pipe: " + std::string(strerror(errno)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1], exec_err[0], exec_err[1]}) {
      ::close(fd);
    }
    return eng::Status::IoError("fork: " + std::string(strerror(errno)));
  }
  if (pid == 0) {
    // Only async-signal-safe calls from here.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) ::signal(sig, SIG_DFL);
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execvp(argv[0], argv.data());
    const int e = errno;
    const ssize_t ignored = ::write(exec_err[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from here, so a signal right after fork finds the group
  for (int fd : {in[0], out[1], err[1], exec_err[1]}) ::close(fd);
  int e = 0;
  ssize_t n;
  while ((n = ::read(exec_err[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  ::close(exec_err[0]);
  if (n == sizeof e) {
    for (int fd : {in[1], out[0], err[0]}) ::close(fd);
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const std::string why = args[0] + ": cannot run: " + strerror(e);
    return e == ENOENT ? eng::Status::NotFound(why) : eng::Status::IoError(why);
  }
  return Child{pid, in[1], out[0], err[0]};
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool LineReader::Read(std::vector<std::string>& lines) {
  char buf[65536];
  const ssize_t n = ::read(fd_, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    if (!partial_.empty()) lines.push_back(std::move(partial_));
    partial_.clear();
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  partial_.append(buf, static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(partial_.substr(start, nl - start));
  }
  partial_.erase(0, start);
  if (partial_.size() > (1 << 20)) {
    lines.push_back(std::move(partial_));
    partial_.clear();
  }
  return true;
}

bool CommandOutput::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string CommandOutput::Describe() const {
  std::string how = WIFEXITED(status) ? "exited with code " + std::to_string(WEXITSTATUS(status))
                    : WIFSIGNALED(status)
                        ? "was killed by signal " + std::to_string(WTERMSIG(status))
                        : "ended";
  // The last line with words in it says most.
  size_t end = err.find_last_not_of(" \n\r\t");
  if (end != std::string::npos) {
    const size_t start = err.rfind('\n', end);
    how += ": " + err.substr(start == std::string::npos ? 0 : start + 1,
                             std::min<size_t>(
                                 end + 1 - (start == std::string::npos ? 0 : start + 1), 500));
  }
  return how;
}

eng::Result<CommandOutput> RunCommandOutput(const std::vector<std::string>& argv,
                                            double timeout_secs, size_t max_bytes) {
  auto child = Spawn(argv);
  if (!child.ok()) return child.status();
  ::close(child->in);
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_secs);
  CommandOutput result;
  int fds[2] = {child->out, child->err};
  std::string* into[2] = {&result.out, &result.err};
  bool timed_out = false;
  while (fds[0] >= 0 || fds[1] >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000))) < 0 &&
        errno != EINTR) {
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || !p[i].revents) continue;
      char buf[65536];
      const ssize_t n = ::read(fds[i], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fds[i]);
        fds[i] = -1;
        continue;
      }
      const size_t room = max_bytes > into[i]->size() ? max_bytes - into[i]->size() : 0;
      into[i]->append(buf, std::min(room, static_cast<size_t>(n)));
    }
  }
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  if (timed_out) ::kill(-child->pid, SIGKILL);
  while (::waitpid(child->pid, &result.status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return eng::Status::DeadlineExceeded(argv[0] + " did not answer within " +
                                         eng::FormatSeconds(timeout_secs) + " s");
  }
  return result;
}

}  // namespace trainingd::daemon
