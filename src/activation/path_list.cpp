#include "path_list.hpp"

#include "envkit/core/text.hpp"

namespace envkit::activation {

namespace fs = std::filesystem;

std::string normal_dir(std::string_view dir) {
  auto normal = fs::path(dir).lexically_normal();
  if (!normal.has_filename() && normal.has_relative_path()) normal = normal.parent_path();
  return normal.string();
}

std::vector<fs::path> list_elements(std::string_view list) {
  std::vector<fs::path> out;
  for (const auto element : text::split(list, ':')) {
    if (!element.empty()) out.emplace_back(element);
  }
  return out;
}

bool same_dir(const fs::path& a, const fs::path& b) {
  std::error_code error;
  if (fs::equivalent(a, b, error)) return true;
  return normal_dir(a.string()) == normal_dir(b.string());
}

}  // namespace envkit::activation
