#pragma once
// One exception type for every user-facing failure: a bad file, flag, config or request.
// The message says what is wrong and where (file, tensor, field), so callers print it as is.
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace paceline {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace paceline
