#include "envkit/build/toolchain_builder.hpp"

namespace envkit::build {

// This module builds on the store: its cache, records, links and generations.
using namespace store;

Result<Toolchain> ToolchainBuilder::toolchain(const std::string& label) const {
  const std::scoped_lock lock(mutex_);
  if (found_) return *found_;
  // Not kept when missing: the error names the package that needed it.
  auto found = find_toolchain({.cc = std::nullopt, .label = label});
  if (!found) return std::move(found).error();
  found_ = *found;
  return *std::move(found);
}

Result<std::string> ToolchainBuilder::identity(const std::string& label) const {
  auto tools = toolchain(label);
  if (!tools) return std::move(tools).error();
  return tools->identity();
}

std::string ToolchainBuilder::description() const {
  const std::scoped_lock lock(mutex_);
  return found_ ? found_->cc_version : std::string("the machine's C compiler");
}

Result<void> ToolchainBuilder::check_tools(specs::BuildSystem build_system,
                                           const std::string& label) const {
  auto tools = toolchain(label);
  if (!tools) return std::move(tools).error();
  return require_build_tools(*tools, build_system, label);
}

Result<std::vector<std::string>> ToolchainBuilder::build(const Request& request) const {
  auto tools = toolchain(request.label);
  if (!tools) return std::move(tools).error();
  auto built = build_from_source({.label = request.label,
                                  .source = request.source,
                                  .work = request.work,
                                  .prefix = request.prefix,
                                  .install_root = request.install_root,
                                  .log = request.log,
                                  .build_system = request.build_system,
                                  .toolchain = *std::move(tools)});
  if (!built) return std::move(built).error();
  return std::move(built->warnings);
}

}  // namespace envkit::build
