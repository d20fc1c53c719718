#include "envkit/oci/blob_reader.hpp"

#include <fmt/format.h>

#include <fstream>

#include "envkit/archive/decompress.hpp"
#include "envkit/core/sha256.hpp"
#include "envkit/oci/layer_encoder.hpp"

namespace envkit::oci {

namespace {

Error unreadable_blob(const std::filesystem::path& blob, std::string_view what) {
  return Error::input(fmt::format("{}: {}", blob.string(), what))
      .hint("export again: `envkit export --oci DIR` rewrites the layout");
}

// The blob's stored bytes, hashed and counted as the decoder reads them.
class HashedFile final : public archive::Source {
 public:
  explicit HashedFile(const std::filesystem::path& path)
      : path_(path), in_(path, std::ios::binary) {}
  [[nodiscard]] bool is_open() const { return in_.is_open(); }
  Result<std::size_t> read(std::span<std::byte> buffer) override {
    in_.read(reinterpret_cast<char*>(buffer.data()), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in_.gcount());
    if (got == 0 && in_.bad()) return Error::failed("cannot read " + path_.string());
    digest_.update(std::string_view(reinterpret_cast<const char*>(buffer.data()), got));
    size_ += got;
    return got;
  }
  [[nodiscard]] std::string name() const override { return path_.string(); }
  [[nodiscard]] std::string hex_digest() { return digest_.hex_digest(); }
  [[nodiscard]] std::uint64_t size() const { return size_; }

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  core::Sha256 digest_;
  std::uint64_t size_ = 0;
};

}  // namespace

// The archive module's decoder, as for every artifact: each trailer checked,
// a stream cut short or followed by other bytes refused.
Result<ReadBlob> read_layer_blob(const std::filesystem::path& blob, std::string_view media_type,
                                 const std::function<void(std::string_view)>& on_tar) {
  const auto compression = compression_of_media_type(media_type);
  if (!compression)
    return unreadable_blob(blob, fmt::format("{} is no layer's media type", media_type));
  HashedFile in(blob);
  if (!in.is_open()) return unreadable_blob(blob, "missing or unreadable");
  core::Sha256 decoded;
  auto format = archive::decompress_all(in, [&](std::string_view bytes) {
    decoded.update(bytes);
    if (on_tar) on_tar(bytes);
  });
  if (!format) {  // the decoder names the blob and says what is wrong with its stream
    auto error = Error::input(format.error().message());
    for (const auto& cause : format.error().causes())
      error.because(cause);
    return error.hint("export again: `envkit export --oci DIR` rewrites the layout");
  }
  if (*format != to_string(*compression)) {
    return unreadable_blob(blob, fmt::format("its media type {} says {}, its bytes are {}",
                                             media_type, to_string(*compression), *format));
  }
  return ReadBlob{.stored = "sha256:" + in.hex_digest(),
                  .size = in.size(),
                  .decoded = "sha256:" + decoded.hex_digest()};
}

}  // namespace envkit::oci
