#include "settings.hpp"

#include <fmt/format.h>

#include <charconv>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"
#include "envkit/net/registry_url.hpp"
#include "envkit/oci/registry_auth.hpp"
#include "envkit/recipes/import_pypi.hpp"
#include "envkit/store/cache.hpp"

namespace envkit::cli {

namespace {

// A count or a millisecond setting from the environment (ENVKIT_RETRIES,
// ENVKIT_RETRY_DELAY_MS, ...): nullopt when unset; a value that is not a whole
// number >= 0 is an input error naming the variable, as other bad ENVKIT_* values are.
Result<std::optional<long>> number_from(const env::Variable& variable) {
  const auto text = env::get(variable);
  if (!text || text->empty()) return std::optional<long>();
  long value = 0;
  const auto* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end || value < 0) {
    // Worded as config.yaml's settings are ("ENVKIT_JOBS: expected ..., found ...").
    return Error::input(fmt::format("{}: expected a whole number, found {}", variable.name,
                                    text::quoted(*text)))
        .hint(fmt::format("unset it, or set it to a number ({})", variable.meaning));
  }
  return std::optional<long>(value);
}

}  // namespace

config::Files config_files(const Context& context) {
  // Absolute, so that sources and errors name the file wherever envkit ran.
  return config::Files::of(std::filesystem::absolute(context.options.directory).lexically_normal());
}

Result<config::Settings> load_settings(const Context& context) {
  auto settings = config::load(config_files(context));
  if (!settings) return settings;
  if (context.options.cache_dir)
    config::set_by_flag(settings->cache_dir, context.options.cache_dir);
  return settings;
}

std::filesystem::path cache_dir_of(const config::Settings& settings) {
  return store::default_cache_dir(settings.cache_dir.value);
}

std::string index_url_of(const config::Settings& settings) {
  if (settings.index_url.value) return *settings.index_url.value;
  return recipes::pip_index_url(recipes::PipIndexSettings::from_environment());
}

Result<net::TransportOptions> transport_options(
    int jobs, const std::optional<std::filesystem::path>& cacert) {
  using std::chrono::milliseconds;
  net::TransportOptions options{.jobs = jobs, .ca_file = cacert};
  const auto apply = [](const env::Variable& variable, auto set) -> Result<void> {
    auto value = number_from(variable);
    if (!value) return std::move(value).error();
    if (*value) set(**value);
    return {};
  };
  for (auto applied :
       {apply(env::kRetries, [&](long v) { options.attempts = static_cast<int>(v); }),
        apply(env::kRetryDelayMs, [&](long v) { options.first_retry_delay = milliseconds(v); }),
        apply(env::kMaxRetryDelayMs, [&](long v) { options.max_retry_delay = milliseconds(v); }),
        apply(env::kStallTimeoutMs, [&](long v) { options.stall_timeout = milliseconds(v); }),
        apply(env::kConnectTimeoutMs,
              [&](long v) { options.connect_timeout = milliseconds(v); })}) {
    if (!applied) return std::move(applied).error();
  }
  return options;
}

net::FetchOptions registry_fetch_options(const net::TransportOptions& transfer) {
  return {.connect_timeout = transfer.connect_timeout,
          .attempts = transfer.attempts,
          .first_retry_delay = transfer.first_retry_delay,
          .ca_file = transfer.ca_file};
}

Result<void> authorize_registries(net::TransportOptions& transfer,
                                  const std::vector<std::string>& mirrors) {
  std::vector<net::RegistryRepo> registries;
  for (const auto& mirror : mirrors) {
    if (!net::is_registry_mirror(mirror)) continue;
    auto registry = net::parse_registry(mirror);
    if (!registry) return std::move(registry).error();
    registries.push_back(*std::move(registry));
  }
  if (registries.empty()) return {};
  transfer.authorizer = std::make_shared<oci::RegistryAuth>(
      std::move(registries), "pull", oci::credential_files(), registry_fetch_options(transfer));
  return {};
}

store::Packaging packaging_from(std::string_view text) {
  return text == "wheel" ? store::Packaging::wheel : store::Packaging::archive;
}

std::vector<std::string> choices(std::span<const std::string_view> names) {
  return {names.begin(), names.end()};
}

}  // namespace envkit::cli
