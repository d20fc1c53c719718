#pragma once

// The settings of the commands that download or use the cache (install,
// mirror, cache, recipes import), resolved once: flags over ENVKIT_* variables
// over the project's and the user's config.yaml (docs/config.md).

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "context.hpp"
#include "envkit/config/config.hpp"
#include "envkit/net/fetch.hpp"
#include "envkit/net/transport.hpp"
#include "envkit/store/plan.hpp"

namespace envkit::cli {

// The user's config file and the project's (`-C`).
[[nodiscard]] config::Files config_files(const Context& context);

// The configuration of the project `-C` names, with the global --cache-dir
// flag applied; a command applies its own flags with config::set_by_flag.
[[nodiscard]] Result<config::Settings> load_settings(const Context& context);

// The cache folder the settings name, else the platform's default.
[[nodiscard]] std::filesystem::path cache_dir_of(const config::Settings& settings);

// The package index of the wheel importers the settings name, else pip's
// (PIP_INDEX_URL, pip.conf, PyPI).
[[nodiscard]] std::string index_url_of(const config::Settings& settings);

// Download options: `jobs` at once, the ENVKIT_RETRY_* / *_TIMEOUT_MS tuning,
// and the CA bundle; a tuning variable that is not a number is an input error.
[[nodiscard]] Result<net::TransportOptions> transport_options(
    int jobs, const std::optional<std::filesystem::path>& cacert);

// The options of a registry's small requests (tokens, HEAD, uploads): the
// transport's CA and connect timeout.
[[nodiscard]] net::FetchOptions registry_fetch_options(const net::TransportOptions& transfer);

// The registries among `mirrors` (oci://HOST/REPO) with their credentials
// (docker's and podman's files), set as `transfer`'s authorizer for `actions`
// ("pull"); nothing when there are none. A registry mirror that cannot be
// parsed is an input error.
[[nodiscard]] Result<void> authorize_registries(net::TransportOptions& transfer,
                                                const std::vector<std::string>& mirrors);

// `archive` or `wheel` (a checked setting or flag) as the store names it.
[[nodiscard]] store::Packaging packaging_from(std::string_view text);

// A setting's choices as CLI11's IsMember takes them, so flags accept what config.yaml does.
[[nodiscard]] std::vector<std::string> choices(std::span<const std::string_view> names);

}  // namespace envkit::cli
