#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/net/registry_url.hpp"
#include "envkit/net/transport.hpp"

namespace envkit::net {

namespace {

Error unusable(std::string_view url, std::string_view why) {
  return Error::failed(
      fmt::format("cannot keep {} in a mirror folder: {}", url::redacted(url), why));
}

}  // namespace

// `envkit mirror --out DIR` lays an artifact out as DIR/HOST/PATH (CLI.md), so
// a static server of DIR has it at MIRROR/HOST/PATH. The path keeps its
// percent escapes (the server decodes them as it would have for the origin);
// the query and fragment name nothing on disk and are dropped.
std::string mirror_path(std::string_view url) {
  const std::string bare = url::without_credentials(url);
  const std::string_view rest(bare);
  const auto begin = url::authority_begin(rest);
  // Without a scheme the URL is taken as HOST/PATH already.
  const auto host_at = begin == std::string_view::npos ? 0 : begin;
  auto host_and_path = rest.substr(host_at);
  host_and_path = host_and_path.substr(0, host_and_path.find_first_of("?#"));
  while (host_and_path.starts_with('/'))
    host_and_path.remove_prefix(1);
  return std::string(host_and_path);
}

std::string mirror_url(std::string_view mirror, std::string_view url) {
  while (mirror.ends_with('/') && !mirror.ends_with("://"))
    mirror.remove_suffix(1);
  return std::string(mirror) + "/" + mirror_path(url);
}

std::string origin_url(std::string_view mirror, std::string_view url) {
  while (mirror.ends_with('/') && !mirror.ends_with("://"))
    mirror.remove_suffix(1);
  const std::string root = std::string(mirror) + "/";
  return url.starts_with(root) ? "https://" + std::string(url.substr(root.size()))
                               : std::string(url);
}

// A registry that cannot be parsed was refused where the mirrors were read
// (the CLI); here it would give a URL libcurl refuses, which fails over to the next.
std::string artifact_mirror_url(std::string_view mirror, std::string_view url,
                                std::string_view sha256) {
  if (!is_registry_mirror(mirror)) return mirror_url(mirror, url);
  auto registry = parse_registry(mirror);
  if (!registry) return mirror_url(mirror, url);
  return registry->blob_url(sha256);
}

// Each segment is decoded on its own, so an escaped `/` (`%2F`) cannot make
// a folder the URL did not have, and `..` (written or escaped) is refused:
// a lock must not be able to write outside the mirror folder.
Result<std::filesystem::path> mirror_file(std::string_view url) {
  const std::string relative = mirror_path(url);
  std::filesystem::path file;
  for (const auto segment : text::split(relative, '/')) {
    if (segment.empty()) continue;  // `a//b` is `a/b`, for servers and file systems alike
    const auto decoded = url::percent_decoded(segment);
    if (!decoded) return unusable(url, fmt::format("`{}` has a malformed %-escape", segment));
    if (*decoded == "." || *decoded == ".." ||
        decoded->find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
      return unusable(url, fmt::format("its path segment `{}` is not a plain name", segment));
    }
    file /= *decoded;
  }
  if (relative.empty() || relative.ends_with('/') || file.begin() == file.end() ||
      std::next(file.begin()) == file.end()) {
    return unusable(url, "it names no file on a host");
  }
  return file;
}

}  // namespace envkit::net
