#include <string>
#include <string_view>

#include "envkit/core/url.hpp"
#include "envkit/net/transport.hpp"

namespace envkit::net {

// `envkit mirror --out DIR` lays an artifact out as DIR/HOST/PATH (CLI.md), so
// a static server of DIR has it at MIRROR/HOST/PATH. The path keeps its
// percent escapes (the server decodes them as it would have for the origin);
// the query and fragment name nothing on disk and are dropped.
std::string mirror_url(std::string_view mirror, std::string_view url) {
  while (mirror.ends_with('/') && !mirror.ends_with("://"))
    mirror.remove_suffix(1);
  const std::string bare = url::without_credentials(url);
  const std::string_view rest(bare);
  const auto begin = url::authority_begin(rest);
  // Without a scheme the URL is taken as HOST/PATH already.
  const auto host_at = begin == std::string_view::npos ? 0 : begin;
  auto host_and_path = rest.substr(host_at);
  host_and_path = host_and_path.substr(0, host_and_path.find_first_of("?#"));
  while (host_and_path.starts_with('/'))
    host_and_path.remove_prefix(1);
  return std::string(mirror) + "/" + std::string(host_and_path);
}

}  // namespace envkit::net
