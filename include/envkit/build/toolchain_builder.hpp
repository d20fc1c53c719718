#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "envkit/build/source_build.hpp"
#include "envkit/store/fill.hpp"

// The store's SourceBuilder for this machine: its C compiler and make (cmake
// where installed), found once, on the first source artifact an install meets.
namespace envkit::build {

class ToolchainBuilder final : public store::SourceBuilder {
 public:
  [[nodiscard]] Result<std::string> identity(const std::string& label) const override;
  [[nodiscard]] std::string description() const override;
  [[nodiscard]] Result<void> check_tools(specs::BuildSystem build_system,
                                         const std::string& label) const override;
  [[nodiscard]] Result<std::vector<std::string>> build(const Request& request) const override;

 private:
  // The toolchain, found on first use; an error names what is missing for `label`.
  [[nodiscard]] Result<Toolchain> toolchain(const std::string& label) const;

  mutable std::mutex mutex_;
  mutable std::optional<Toolchain> found_;
};

}  // namespace envkit::build
