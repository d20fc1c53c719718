#pragma once

#include <functional>
#include <memory>

#include "envkit/net/transport.hpp"

namespace envkit::net::detail {

[[nodiscard]] bool is_file_url(std::string_view url);

// A download whose URLs include file:// ones (mirrors on a local or network
// disk). libcurl cannot pause a file:// transfer to wait for a slow reader,
// and the kernel is the faster path anyway, so those are read straight from
// the file in the reader's thread; each run of other URLs goes through
// `remote` (libcurl). When one fails the next continues from the same byte;
// the final error names every URL.
[[nodiscard]] std::unique_ptr<ByteStream> open_chain(
    DownloadRequest request, std::function<std::unique_ptr<ByteStream>(DownloadRequest)> remote);

}  // namespace envkit::net::detail
