#include "settings.hpp"

#include <charconv>

#include "envkit/core/env_vars.hpp"
#include "envkit/recipes/import_pypi.hpp"
#include "envkit/store/cache.hpp"

namespace envkit::cli {

namespace {

// A millisecond setting from the environment (ENVKIT_RETRY_DELAY_MS, ...).
std::optional<long> number_from(const env::Variable& variable) {
  const auto text = env::get(variable);
  if (!text) return std::nullopt;
  long value = 0;
  const auto* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end || value < 0) return std::nullopt;
  return value;
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

net::TransportOptions transport_options(int jobs,
                                        const std::optional<std::filesystem::path>& cacert) {
  using std::chrono::milliseconds;
  net::TransportOptions options{.jobs = jobs, .ca_file = cacert};
  if (auto v = number_from(env::kRetries)) options.attempts = static_cast<int>(*v);
  if (auto v = number_from(env::kRetryDelayMs)) options.first_retry_delay = milliseconds(*v);
  if (auto v = number_from(env::kMaxRetryDelayMs)) options.max_retry_delay = milliseconds(*v);
  if (auto v = number_from(env::kStallTimeoutMs)) options.stall_timeout = milliseconds(*v);
  if (auto v = number_from(env::kConnectTimeoutMs)) options.connect_timeout = milliseconds(*v);
  return options;
}

store::Packaging packaging_from(std::string_view text) {
  return text == "wheel" ? store::Packaging::wheel : store::Packaging::archive;
}

std::vector<std::string> choices(std::span<const std::string_view> names) {
  return {names.begin(), names.end()};
}

}  // namespace envkit::cli
