#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "envkit/core/result.hpp"

// A layer blob read once: its stored bytes hashed, and decompressed (by its
// OCI media type: +gzip, +zstd or plain tar) into a callback.
namespace envkit::oci {

struct ReadBlob {
  std::string stored;  // "sha256:<hex>" of the bytes as stored
  std::uint64_t size = 0;
  std::string decoded;  // "sha256:<hex>" of the tar
};

// A stream that cannot be decompressed, or cut short, is an input error naming `blob`.
[[nodiscard]] Result<ReadBlob> read_layer_blob(
    const std::filesystem::path& blob, std::string_view media_type,
    const std::function<void(std::string_view tar_bytes)>& on_tar = {});

}  // namespace envkit::oci
