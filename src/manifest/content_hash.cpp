#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "envkit/core/sha256.hpp"
#include "envkit/manifest/manifest.hpp"

namespace envkit::manifest {

namespace {

// The canonical text hashed: one line per fact, a tag then its fields, each
// field written as `<length>:<text>` so that no value can imitate a separator.
// The facts come in a fixed order (maps are sorted by key already); the first
// line names the serialization, so that changing it changes every hash.
class Canonical {
 public:
  void line(std::string_view tag, std::initializer_list<std::string_view> fields) {
    text_ += tag;
    for (const auto field : fields)
      text_ += fmt::format(" {}:{}", field.size(), field);
    text_ += '\n';
  }
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  std::string text_;
};

std::string external_text(const ExternalSource& source, std::string& kind) {
  return std::visit(
      [&](const auto& value) -> std::string {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, specs::Version>) {
          kind = "version";
          return value.original();
        } else if constexpr (std::is_same_v<T, ExternalSystem>) {
          kind = "system";
          return "";
        } else {
          kind = "path";
          return value.path.string();
        }
      },
      source);
}

}  // namespace

std::string content_hash(const Manifest& manifest) {
  Canonical out;
  out.line("envkit-manifest", {"1"});
  out.line("name", {manifest.name});
  if (manifest.framework) {
    out.line("framework", {manifest.framework->name, manifest.framework->spec.to_string()});
  }
  for (const auto& [package, spec] : manifest.requires_)
    out.line("requires", {package, spec.to_string()});
  for (const auto& [package, source] : manifest.external) {
    std::string kind;
    const std::string value = external_text(source, kind);
    out.line("external", {package, kind, value});
  }
  // In the order written: the first platform is the one shown first.
  for (const auto platform : manifest.platforms)
    out.line("platform", {specs::to_string(platform)});
  if (manifest.system.driver) out.line("system.driver", {manifest.system.driver->to_string()});
  std::vector<specs::ComputeCapability> arch = manifest.system.cuda_arch;
  std::sort(arch.begin(), arch.end());
  arch.erase(std::unique(arch.begin(), arch.end()), arch.end());
  for (const auto& capability : arch)
    out.line("system.cuda-arch", {capability.to_string()});
  if (manifest.system.glibc) out.line("system.glibc", {manifest.system.glibc->to_string()});
  for (const auto& file : manifest.python_requirements)
    out.line("python-requirements", {file});
  for (const auto& index : manifest.indexes)
    out.line("indexes", {index});
  if (manifest.only_binary) out.line("only-binary", {"true"});  // absent keeps older hashes
  // Absent keys keep older hashes.
  if (manifest.resolution.as_of) out.line("resolution.as-of", {*manifest.resolution.as_of});
  for (const auto& package : manifest.resolution.build_with_framework)
    out.line("resolution.build-with-framework", {package});
  out.line("smoke.steps", {std::to_string(manifest.smoke.steps)});
  return "sha256:" + core::sha256_hex(out.text());
}

}  // namespace envkit::manifest
