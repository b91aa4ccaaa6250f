#include "trainingd/daemon/service/flags.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace trainingd::daemon {
namespace {

// All of `text` as an integer of T; nullopt for anything else ("12abc", "", out of range).
template <typename T>
std::optional<T> Integer(const std::string& text) {
  T v{};
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

std::optional<std::string> InRange(const std::string& text, int64_t lo, int64_t hi, int64_t* out) {
  const std::optional<int64_t> v = Integer<int64_t>(text);
  if (!v || *v < lo || *v > hi) {
    return "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" +
           text + "'";
  }
  *out = *v;
  return std::nullopt;
}

}  // namespace

Flags::Flags(std::string command, std::string synopsis, std::string about)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), about_(std::move(about)) {}

Flags& Flags::Add(const std::string& name, const std::string& value, const std::string& help,
                  Handler handler) {
  flags_.push_back({name, value, help, std::move(handler)});
  return *this;
}

Flags& Flags::String(const std::string& name, const std::string& value, const std::string& help,
                     std::string* out) {
  return Add(name, value, help, [out](const std::string& v) -> std::optional<std::string> {
    *out = v;
    return std::nullopt;
  });
}

Flags& Flags::Int(const std::string& name, const std::string& help, int64_t lo, int64_t hi,
                  int64_t* out) {
  return Add(name, "N", help, [=](const std::string& v) { return InRange(v, lo, hi, out); });
}

Flags& Flags::Int(const std::string& name, const std::string& help, int64_t lo, int64_t hi,
                  int* out) {
  return Add(name, "N", help, [=](const std::string& v) -> std::optional<std::string> {
    int64_t x = 0;
    if (auto err = InRange(v, lo, hi, &x)) return err;
    *out = static_cast<int>(x);
    return std::nullopt;
  });
}

Flags& Flags::Int(const std::string& name, const std::string& help, int64_t lo, int64_t hi,
                  std::optional<int64_t>* out) {
  return Add(name, "N", help, [=](const std::string& v) -> std::optional<std::string> {
    int64_t x = 0;
    if (auto err = InRange(v, lo, hi, &x)) return err;
    *out = x;
    return std::nullopt;
  });
}

Flags& Flags::Uint(const std::string& name, const std::string& help, uint64_t* out) {
  return Add(name, "N", help, [=](const std::string& v) -> std::optional<std::string> {
    const std::optional<uint64_t> x = Integer<uint64_t>(v);
    if (!x) return "must be an integer in [0, 2^64), got '" + v + "'";
    *out = *x;
    return std::nullopt;
  });
}

Flags& Flags::Switch(const std::string& name, const std::string& help, bool* out) {
  Add(name, "", help, [out](const std::string&) -> std::optional<std::string> {
    *out = true;
    return std::nullopt;
  });
  flags_.back().takes_value = false;
  return *this;
}

Flags& Flags::Positive(const std::string& name, const std::string& help,
                       std::optional<double>* out) {
  return Add(name, "X", help, [=](const std::string& v) -> std::optional<std::string> {
    double x = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || p != v.data() + v.size() || v.empty() || !std::isfinite(x) || x <= 0) {
      return "must be a positive finite number, got '" + v + "'";
    }
    *out = x;
    return std::nullopt;
  });
}

Flags& Flags::Positionals(const std::string& what, size_t max, std::vector<std::string>* out) {
  positional_what_ = what;
  max_positionals_ = max;
  positionals_ = out;
  return *this;
}

engine::Status Flags::Parse(const std::vector<std::string>& args, bool* help) const {
  if (help) *help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      if (help) *help = true;
      return engine::Status::Ok();
    }
    const Flag* flag = nullptr;
    for (const Flag& f : flags_) {
      if (f.name == a) flag = &f;
    }
    // A short flag ("-o") is one only when registered; any other word without "--" is positional.
    if (!flag && a.rfind("--", 0) != 0) {
      if (!positionals_ || positionals_->size() >= max_positionals_) {
        return engine::Status::InvalidArgument(a + ": unexpected argument" +
                                               (positionals_
                                                    ? " (only " + std::to_string(max_positionals_) +
                                                          " " + positional_what_ + " may be given)"
                                                    : ""));
      }
      positionals_->push_back(a);
      continue;
    }
    if (!flag) {
      std::string known;
      for (const Flag& f : flags_) known += (known.empty() ? "" : ", ") + f.name;
      return engine::Status::InvalidArgument(a + ": unknown flag (flags: " + known + ")");
    }
    if (!flag->takes_value) {
      flag->handler("");
      continue;
    }
    if (i + 1 >= args.size()) return engine::Status::InvalidArgument(a + ": missing value");
    if (auto err = flag->handler(args[++i])) {
      return engine::Status::InvalidArgument(a + ": " + *err);
    }
  }
  return engine::Status::Ok();
}

std::string Flags::Usage() const {
  std::string out = "usage: trainingd " + command_;
  if (!synopsis_.empty()) out += " " + synopsis_;
  out += flags_.empty() ? "\n" : " [flags]\n";
  for (const Flag& f : flags_) {
    std::string left = "  " + f.name + (f.value.empty() ? "" : " " + f.value);
    if (left.size() < 24) left.resize(24, ' ');
    out += left + " " + f.help + "\n";
  }
  return out + about_;
}

int RunWithFlags(const Flags& flags, const std::vector<std::string>& args,
                 const std::function<int()>& body) {
  bool help = false;
  if (engine::Status st = flags.Parse(args, &help); !st.ok()) {
    std::fprintf(stderr, "trainingd %s: %s\n%s", flags.command().c_str(), st.message().c_str(),
                 flags.Usage().c_str());
    return 2;
  }
  if (help) {
    std::fputs(flags.Usage().c_str(), stdout);
    return 0;
  }
  return body();
}

}  // namespace trainingd::daemon
