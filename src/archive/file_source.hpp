#pragma once

// Internal to archive: a Source reading an open file from where it stands.

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "envkit/archive/extract.hpp"
#include "envkit/sys/unique_fd.hpp"

namespace envkit::archive::detail {

class FileSource final : public Source {
 public:
  FileSource(sys::UniqueFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}
  Result<std::size_t> read(std::span<std::byte> buffer) override {
    while (true) {
      const auto n = ::read(fd_.get(), buffer.data(), buffer.size());
      if (n >= 0) return static_cast<std::size_t>(n);
      if (errno == EINTR) continue;
      return Error::failed(fmt::format("cannot read `{}`", name_)).because(std::strerror(errno));
    }
  }
  [[nodiscard]] std::string name() const override { return name_; }

 private:
  sys::UniqueFd fd_;
  std::string name_;
};

}  // namespace envkit::archive::detail
