#include "envkit/oci/registry_credentials.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "envkit/core/env_vars.hpp"
#include "envkit/core/text.hpp"

namespace envkit::oci {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// docker writes keys as "HOST", "https://HOST" or "https://HOST/v1/": the host is what counts.
std::string_view key_host(std::string_view key) {
  if (const auto scheme = key.find("://"); scheme != std::string_view::npos)
    key.remove_prefix(scheme + 3);
  return key.substr(0, key.find('/'));
}

Error unreadable(const fs::path& file, std::string_view why) {
  return Error::failed(
             fmt::format("cannot read registry credentials from {}: {}", file.string(), why))
      .hint("fix or move the file; `docker login HOST` writes it");
}

// The entry of `auths` for `host`, decoded; nullopt when there is none.
Result<std::optional<RegistryCredentials>> from_auths(const nlohmann::json& auths,
                                                      std::string_view host, const fs::path& file) {
  for (const auto& [key, entry] : auths.items()) {
    if (key_host(key) != host || !entry.is_object()) continue;
    RegistryCredentials found{.file = file};
    if (entry.contains("auth") && entry["auth"].is_string()) {
      auto decoded = base64_decode(entry["auth"].get<std::string>());
      const auto colon = decoded ? decoded->find(':') : std::string::npos;
      if (colon == std::string::npos) {
        return unreadable(file, fmt::format("the `auth` of {} is not base64 of user:password",
                                            text::quoted(key)));
      }
      found.username = decoded->substr(0, colon);
      found.password = decoded->substr(colon + 1);
    } else if (entry.contains("username") && entry.contains("password")) {
      found.username = entry.value("username", "");
      found.password = entry.value("password", "");
    } else {
      continue;  // an empty entry (docker leaves them beside a credsStore)
    }
    return std::optional(std::move(found));
  }
  return std::optional<RegistryCredentials>();
}

// A helper named for `host`, by `credHelpers` or `credsStore`.
std::optional<std::string> helper_for(const nlohmann::json& config, std::string_view host) {
  if (const auto helpers = config.find("credHelpers");
      helpers != config.end() && helpers->is_object()) {
    for (const auto& [key, name] : helpers->items()) {
      if (key_host(key) == host && name.is_string()) return name.get<std::string>();
    }
  }
  if (const auto store = config.find("credsStore"); store != config.end() && store->is_string())
    return store->get<std::string>();
  return std::nullopt;
}

}  // namespace

std::vector<fs::path> credential_files() {
  std::vector<fs::path> files;
  if (auto file = env::get(env::kRegistryAuthFile); file && !file->empty()) {
    files.emplace_back(*file);
  } else if (auto runtime = env::get(env::kXdgRuntimeDir); runtime && !runtime->empty()) {
    files.push_back(fs::path(*runtime) / "containers" / "auth.json");
  }
  if (auto folder = env::get(env::kDockerConfig); folder && !folder->empty()) {
    files.push_back(fs::path(*folder) / "config.json");
  } else if (auto home = env::get(env::kHome); home && !home->empty()) {
    files.push_back(fs::path(*home) / ".docker" / "config.json");
  }
  return files;
}

Result<std::optional<RegistryCredentials>> find_credentials(std::string_view host,
                                                            const std::vector<fs::path>& files) {
  std::optional<std::string> helper;
  for (const auto& file : files) {
    std::ifstream in(file);
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    const auto config = nlohmann::json::parse(text.str(), nullptr, false);
    if (config.is_discarded() || !config.is_object()) return unreadable(file, "it is not JSON");
    if (const auto auths = config.find("auths"); auths != config.end() && auths->is_object()) {
      auto found = from_auths(*auths, host, file);
      if (!found || *found) return found;
    }
    if (!helper) helper = helper_for(config, host);
  }
  if (helper) {
    return Error::failed(fmt::format("the credentials for {} are kept by the credential helper "
                                     "`docker-credential-{}`, "
                                     "which envkit does not run",
                                     host, *helper))
        .hint(
            "give envkit a file it reads: REGISTRY_AUTH_FILE=FILE with "
            "{\"auths\": {\"HOST\": {\"auth\": base64 of user:password}}}, or "
            "`podman login --authfile FILE HOST`");
  }
  return std::optional<RegistryCredentials>();
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t chunk = static_cast<std::uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size())
      chunk |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) chunk |= static_cast<std::uint8_t>(bytes[i + 2]);
    out += kBase64[(chunk >> 18) & 63];
    out += kBase64[(chunk >> 12) & 63];
    out += i + 1 < bytes.size() ? kBase64[(chunk >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kBase64[chunk & 63] : '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    if (c == '=') break;
    const auto value = kBase64.find(c);
    if (value == std::string_view::npos) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xFF);
    }
  }
  return out;
}

}  // namespace envkit::oci
