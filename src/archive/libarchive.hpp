#pragma once

// Internal to archive: libarchive is loaded the first time it is needed
// (libarchive_loader.cpp).

#include <optional>
#include <string>

namespace envkit::archive::detail {

// Why libarchive.so.13 cannot be loaded, with what to install; nullopt when it loads.
[[nodiscard]] std::optional<std::string> libarchive_load_error();

}  // namespace envkit::archive::detail
