#pragma once

#include <functional>
#include <memory>

#include "envkit/net/transport.hpp"

namespace envkit::net::detail {

[[nodiscard]] bool is_file_url(std::string_view url);

// A download whose URLs include file:// ones (mirrors on a local or network
// disk). libcurl cannot pause a file:// transfer to wait for a slow reader,
// and the kernel is the faster path anyway, so those are read straight from
// the file (by a thread of the stream's own, which a hung network disk cannot
// take the reader down with: `options.stall_timeout` holds as for HTTP); each
// run of other URLs goes through `remote` (libcurl). Only regular files are
// read, and no more of one than the request's expected size. When one URL
// fails the next continues from the same byte, `on_url_failed` hears of it,
// and the final error names every URL.
[[nodiscard]] std::unique_ptr<ByteStream> open_chain(
    DownloadRequest request, const TransportOptions& options,
    std::function<std::unique_ptr<ByteStream>(DownloadRequest)> remote);

}  // namespace envkit::net::detail
