#include "envkit/oci/registry_push.hpp"

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "envkit/core/sha256.hpp"
#include "envkit/core/text.hpp"
#include "envkit/core/url.hpp"
#include "envkit/store/mirror.hpp"

namespace envkit::oci {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kManifestType = "application/vnd.oci.image.manifest.v1+json";
constexpr std::string_view kEmptyType = "application/vnd.oci.empty.v1+json";
constexpr std::string_view kEmptyJson = "{}";

// One blob of the manifest: an artifact of the lock, or the empty config.
struct Blob {
  std::string sha256;
  std::uint64_t size = 0;
  std::string title;                      // its file name
  std::optional<store::MirrorFile> file;  // where it comes from; none for the config
};

struct BlobOutcome {
  bool uploaded = false;
  std::uint64_t size = 0;
  std::optional<Error> error;
};

Error registry_failure(const PushOptions& options, std::string_view what, const std::string& url,
                       const net::Response& response) {
  Error error = Error::failed(fmt::format("cannot {} in {}", what, options.registry.spelled));
  auto why = fmt::format("`{}` answered HTTP {}", url::redacted(url), response.status);
  if (auto more = options.auth->explain(url, response.status, response.body); !more.empty())
    why += ": " + more;
  return error.because(why);
}

// The size of the blob when the registry has it; nullopt when not.
Result<std::optional<std::uint64_t>> blob_size(const PushOptions& options,
                                               const std::string& sha256) {
  const auto url = options.registry.blob_url(sha256);
  auto fetch = options.fetch;
  fetch.method = "HEAD";
  auto response = options.auth->send(url, fetch);
  if (!response) return std::move(response).error();
  if (response->status == 404) return std::optional<std::uint64_t>();
  if (response->status != 200)
    return registry_failure(options, "look for blob sha256:" + sha256, url, *response);
  std::uint64_t size = 0;
  if (auto length = response->header("Content-Length")) size = std::stoull(*length);
  return std::optional(size);
}

// A Location header as an absolute URL (registries may answer a path).
std::string absolute(const PushOptions& options, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  return options.registry.base + (location.starts_with('/') ? "" : "/") + location;
}

// POST blobs/uploads/, then one PUT of the body (from memory or a file) with its digest.
Result<void> upload(const PushOptions& options, const std::string& sha256,
                    const std::optional<fs::path>& file, std::string_view bytes) {
  const auto start_url = options.registry.api_url("blobs/uploads/");
  auto fetch = options.fetch;
  fetch.method = "POST";
  fetch.follow_redirects = false;
  auto started = options.auth->send(start_url, fetch);
  if (!started) return std::move(started).error();
  const auto location = started->header("Location");
  if (started->status != 202 || !location) {
    return registry_failure(options, "start the upload of sha256:" + sha256, start_url, *started);
  }
  auto put_url = absolute(options, *location);
  put_url += put_url.find('?') == std::string::npos ? '?' : '&';
  put_url += "digest=sha256%3A" + sha256;
  fetch.method = "PUT";
  fetch.headers.push_back("Content-Type: application/octet-stream");
  fetch.timeout = std::chrono::hours(12);  // a GB over a slow link; stalls end it sooner
  if (file) {
    fetch.body_file = *file;
  } else {
    fetch.body = std::string(bytes);
  }
  auto put = options.auth->send(put_url, fetch);
  if (!put) return std::move(put).error();
  if (put->status != 201)
    return registry_failure(options, "upload sha256:" + sha256, put_url, *put);
  return {};
}

BlobOutcome push_blob(const PushOptions& options, const Blob& blob, std::size_t index) {
  auto size = blob_size(options, blob.sha256);
  if (!size) return {.error = std::move(size).error()};
  if (*size) return {.size = **size};
  if (!blob.file) {
    auto sent = upload(options, blob.sha256, std::nullopt, kEmptyJson);
    if (!sent) return {.error = std::move(sent).error()};
    return {.uploaded = true, .size = kEmptyJson.size()};
  }
  const auto part = options.work / fmt::format("{}.part", index);
  const auto whole = options.work / fmt::format("{}.blob", index);
  const store::MirrorOptions download{.out = options.work,
                                      .transport = options.transport,
                                      .mirrors = options.mirrors,
                                      .note = options.note};
  auto bytes = store::download_verified(*blob.file, part, whole, download);
  if (!bytes) return {.error = std::move(bytes).error()};
  auto sent = upload(options, blob.sha256, whole, {});
  std::error_code ignored;
  fs::remove(whole, ignored);
  if (!sent) return {.error = std::move(sent).error()};
  return {.uploaded = true, .size = *bytes};
}

// The lock's artifacts, one per digest, in the order mirror_files gives them (by path).
Result<std::vector<Blob>> blobs_of(const lock::Lockfile& lockfile) {
  auto files = store::mirror_files(lockfile, {});
  if (!files) return std::move(files).error();
  std::vector<Blob> blobs;
  std::map<std::string, bool> seen;
  for (auto& file : *files) {
    const auto& artifact = file.target.artifact;
    if (!seen.emplace(artifact.sha256, true).second) continue;
    blobs.push_back({.sha256 = artifact.sha256,
                     .size = artifact.size.value_or(0),
                     .title = url::file_name(artifact.url),
                     .file = std::move(file)});
  }
  return blobs;
}

std::string manifest_of(const std::vector<Blob>& blobs, std::string_view lock_sha256) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const auto& blob : blobs) {
    layers.push_back({{"mediaType", "application/octet-stream"},
                      {"digest", "sha256:" + blob.sha256},
                      {"size", blob.size},
                      {"annotations", {{"org.opencontainers.image.title", blob.title}}}});
  }
  const nlohmann::ordered_json manifest = {
      {"schemaVersion", 2},
      {"mediaType", kManifestType},
      {"artifactType", kLockArtifactType},
      {"config",
       {{"mediaType", kEmptyType},
        {"digest", "sha256:" + core::sha256_hex(kEmptyJson)},
        {"size", kEmptyJson.size()},
        {"data", "e30="}}},
      {"layers", layers},
      {"annotations", {{std::string(kLockAnnotation), std::string(lock_sha256)}}}};
  return manifest.dump();
}

}  // namespace

std::string lock_tag(std::string_view lock_sha256) {
  return "envkit-lock-" + std::string(lock_sha256.substr(0, 16));
}

Result<PushReport> push(const lock::Lockfile& lockfile, std::string_view lock_sha256,
                        const PushOptions& options) {
  auto listed = blobs_of(lockfile);
  if (!listed) return std::move(listed).error();
  auto blobs = *std::move(listed);
  std::error_code error;
  fs::remove_all(options.work, error);
  fs::create_directories(options.work, error);
  if (error) {
    return Error::failed(
        fmt::format("cannot create {}: {}", text::quoted(options.work.string()), error.message()));
  }
  std::vector<Blob> all = blobs;
  all.push_back({.sha256 = core::sha256_hex(kEmptyJson), .size = kEmptyJson.size()});
  std::vector<BlobOutcome> outcomes(all.size());
  std::atomic<std::size_t> next{0};
  std::mutex notes;
  const auto work = [&] {
    for (auto i = next++; i < all.size(); i = next++) {
      outcomes[i] = push_blob(options, all[i], i);
      if (outcomes[i].uploaded && all[i].file && options.note) {
        std::lock_guard lock(notes);
        options.note(fmt::format("uploaded {}", all[i].file->target.label()));
      }
    }
  };
  std::vector<std::thread> workers;
  for (int i = 0; i < std::max(options.jobs, 1); ++i)
    workers.emplace_back(work);
  for (auto& worker : workers)
    worker.join();
  fs::remove_all(options.work, error);

  PushReport report{.tag = lock_tag(lock_sha256)};
  std::optional<Error> first;
  std::size_t failed = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto& outcome = outcomes[i];
    if (outcome.error) {
      if (!first) first = *outcome.error;
      ++failed;
      continue;
    }
    if (i >= blobs.size()) continue;  // the empty config: not an artifact of the lock
    blobs[i].size = outcome.size;     // the registry's or the download's
    if (outcome.uploaded) {
      ++report.uploaded;
      report.uploaded_bytes += outcome.size;
    } else {
      ++report.present;
      report.present_bytes += outcome.size;
    }
  }
  if (first) {
    if (failed > 1) first->because(fmt::format("and {} more blob(s) failed", failed - 1));
    return std::move(first->hint("no manifest was written; run the push again to finish it"));
  }
  const auto manifest = manifest_of(blobs, lock_sha256);
  const auto url = options.registry.api_url("manifests/" + report.tag);
  auto fetch = options.fetch;
  fetch.method = "PUT";
  fetch.follow_redirects = false;
  fetch.headers.push_back("Content-Type: " + std::string(kManifestType));
  fetch.body = manifest;
  auto put = options.auth->send(url, fetch);
  if (!put) return std::move(put).error();
  if (put->status != 201) return registry_failure(options, "write the manifest", url, *put);
  report.manifest_digest = "sha256:" + core::sha256_hex(manifest);
  return report;
}

}  // namespace envkit::oci
