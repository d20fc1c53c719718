#include "envkit/oci/base_image.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/oci/blob_reader.hpp"
#include "envkit/python/wheel_filename.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::oci {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::size_t kTarBlock = 512;

// Reads tar headers from a stream, keeping the bytes of the files `wanted` names.
class LibcScanner {
 public:
  void feed(std::string_view bytes) {
    while (!bytes.empty() && !done_) {
      if (skip_ > 0) {
        const auto n = std::min<std::uint64_t>(skip_, bytes.size());
        if (capturing_) content_.append(bytes.substr(0, n));
        skip_ -= n;
        bytes.remove_prefix(n);
        if (skip_ == 0 && capturing_) finish_file();
        continue;
      }
      const auto n = std::min(kTarBlock - header_.size(), bytes.size());
      header_.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
      if (header_.size() == kTarBlock) start_entry();
    }
  }
  [[nodiscard]] const std::optional<std::string>& glibc() const { return glibc_; }

 private:
  void start_entry() {
    const auto header = std::move(header_);
    header_.clear();
    if (header[0] == '\0') return;  // the end blocks
    const auto name_field = header.substr(0, 100);
    name_ = name_field.substr(0, name_field.find('\0'));
    std::uint64_t size = 0;
    try {
      size = std::stoull(header.substr(124, 11), nullptr, 8);
    } catch (const std::exception&) {
      done_ = true;  // not a tar envkit can read: no glibc found
      return;
    }
    const auto padded = (size + kTarBlock - 1) / kTarBlock * kTarBlock;
    const auto base = fs::path(name_).filename().string();
    const bool libc = header[156] == '0' && (base == "libc.so.6" || base.starts_with("libc-2."));
    capturing_ = libc;
    content_.clear();
    remaining_ = size;
    skip_ = padded;
    if (capturing_ && size == 0) finish_file();
  }
  void finish_file() {
    capturing_ = false;
    if (auto version = glibc_version_of(fs::path(name_).filename().string(),
                                        std::string_view(content_).substr(0, remaining_)))
      glibc_ = version;
    content_.clear();
  }

  std::string header_;
  std::string name_;
  std::string content_;
  std::uint64_t skip_ = 0;
  std::uint64_t remaining_ = 0;
  bool capturing_ = false;
  bool done_ = false;
  std::optional<std::string> glibc_;
};

Error bad_base(const fs::path& layout, const std::string& ref, std::string what) {
  return Error::input(fmt::format("the base image {}:{}: {}", layout.string(), ref, what))
      .hint(
          "name a local OCI layout: `skopeo copy docker://IMAGE oci:DIR:REF`, then --base DIR:REF");
}

Result<json> read_json_file(const fs::path& path) {
  auto text = sys::read_file(path);
  if (!text) return std::move(text).error();
  try {
    return json::parse(*text);
  } catch (const json::exception& error) {
    return Error::input(fmt::format("{} is not JSON", text::quoted(path.string())))
        .because(error.what());
  }
}

std::string name_of(const std::string& assignment) {
  return assignment.substr(0, assignment.find('='));
}

// "2.36" as a number to compare: 2.36 -> 36 (glibc 2 is every glibc since 1997).
std::optional<unsigned> minor_of(const std::string& version) {
  const auto parts = text::split(version, '.');
  if (parts.size() < 2 || parts[0] != "2") return std::nullopt;
  try {
    return static_cast<unsigned>(std::stoul(std::string(parts[1])));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::string> glibc_version_of(std::string_view name, std::string_view content) {
  static const std::regex by_name(R"(^libc-(2\.[0-9]+)\.so$)");
  static const std::regex banner(R"(release version (2\.[0-9]+))");
  std::match_results<std::string_view::const_iterator> match;
  if (std::regex_match(name.begin(), name.end(), match, by_name)) return match[1].str();
  if (std::regex_search(content.begin(), content.end(), match, banner)) return match[1].str();
  return std::nullopt;
}

Result<BaseImage> read_base_image(const fs::path& layout, const std::string& ref,
                                  specs::Platform platform) {
  auto index = read_json_file(layout / "index.json");
  if (!index) return bad_base(layout, ref, index.error().message());
  BaseImage base{.name = layout.string() + ":" + ref};
  try {
    std::vector<json> found;
    for (const auto& descriptor : index->at("manifests")) {
      const auto annotations = descriptor.value("annotations", json::object());
      if (annotations.value(std::string(kRefAnnotation), std::string()) == ref)
        found.push_back(descriptor);
    }
    const auto architecture = oci_architecture(platform);
    const auto chosen = std::find_if(found.begin(), found.end(), [&](const json& descriptor) {
      return descriptor.value("platform", json::object()).value("architecture", "") == architecture;
    });
    if (found.empty()) return bad_base(layout, ref, "no such image in the layout");
    const auto& descriptor = chosen != found.end() ? *chosen : found.front();
    auto manifest = read_json_file(blob_path(layout, descriptor.at("digest").get<std::string>()));
    if (!manifest) return bad_base(layout, ref, manifest.error().message());
    auto config =
        read_json_file(blob_path(layout, manifest->at("config").at("digest").get<std::string>()));
    if (!config) return bad_base(layout, ref, config.error().message());
    if (config->value("architecture", "") != architecture) {
      return bad_base(layout, ref,
                      fmt::format("it is for {}, the environment for {}",
                                  config->value("architecture", "?"), architecture));
    }
    const auto image_config = config->value("config", json::object());
    base.env = image_config.value("Env", std::vector<std::string>());
    const auto& diff_ids = config->at("rootfs").at("diff_ids");
    const auto& layers = manifest->at("layers");
    if (diff_ids.size() != layers.size())
      return bad_base(layout, ref, "its config's diff_ids do not match its layers");
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto media_type = layers[i].at("mediaType").get<std::string>();
      const auto compression = compression_of_media_type(media_type);
      if (!compression) return bad_base(layout, ref, "a layer of media type " + media_type);
      Layer layer{
          .digests = {.diff_id = diff_ids[i].get<std::string>(),
                      .digest = layers[i].at("digest").get<std::string>(),
                      .size = layers[i].at("size").get<std::uint64_t>()},
          .compression = *compression,
          .blob = blob_path(layout, layers[i].at("digest").get<std::string>()),
          .annotations = layers[i].value("annotations", std::map<std::string, std::string>())};
      LibcScanner scanner;
      auto read = read_layer_blob(layer.blob, media_type,
                                  [&](std::string_view bytes) { scanner.feed(bytes); });
      if (!read) return std::move(read).error();
      if (read->stored != layer.digests.digest || read->decoded != layer.digests.diff_id) {
        return bad_base(layout, ref,
                        fmt::format("the layer {} is not what its digests say (run `envkit export "
                                    "--verify {}:{}`)",
                                    layer.digests.digest, layout.string(), ref));
      }
      if (scanner.glibc()) base.glibc = scanner.glibc();
      base.layers.push_back(std::move(layer));
    }
  } catch (const json::exception& error) {
    return bad_base(layout, ref, fmt::format("a malformed manifest or config ({})", error.what()));
  }
  return base;
}

Result<void> check_base_glibc(const BaseImage& base, const lock::PlatformLock& locked) {
  if (!base.glibc || !locked.python) return {};
  const auto has = minor_of(*base.glibc);
  if (!has) return {};
  const std::string arch = locked.platform == specs::Platform::linux_aarch64 ? "aarch64" : "x86_64";
  std::optional<unsigned> needed;
  std::string needing;
  for (const auto& wheel : locked.python->packages) {
    if (wheel.kind != lock::Distribution::wheel) continue;
    const auto file = url::file_name(wheel.url);
    auto parsed = python::parse_wheel_filename(file);
    if (!parsed) continue;
    const auto minor = python::wheel_glibc_minor(*parsed, arch);
    if (minor && (!needed || *minor > *needed)) {
      needed = minor;
      needing = file;
    }
  }
  if (!needed || *needed <= *has) return {};
  return Error::failed(fmt::format("the base image {} has glibc {}, but {} needs glibc 2.{}",
                                   base.name, *base.glibc, needing, *needed))
      .hint(fmt::format("choose a base image with glibc 2.{} or newer", *needed));
}

std::vector<std::string> merged_env(const std::vector<std::string>& base,
                                    const std::vector<std::string>& ours) {
  std::vector<std::string> out = base;
  for (const auto& assignment : ours) {
    const auto name = name_of(assignment);
    const auto same = std::find_if(out.begin(), out.end(), [&](const std::string& existing) {
      return name_of(existing) == name;
    });
    if (same != out.end()) {
      *same = assignment;
    } else {
      out.push_back(assignment);
    }
  }
  return out;
}

}  // namespace envkit::oci
