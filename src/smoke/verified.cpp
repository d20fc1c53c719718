#include "envkit/smoke/verified.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "envkit/core/sha256.hpp"
#include "envkit/sys/fs.hpp"

namespace envkit::smoke {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
constexpr int kFormat = 1;

}  // namespace

fs::path verified_path(const fs::path& prefix) {
  return prefix.lexically_normal().parent_path() / "verified.json";
}

Verified verified_from(const ProgramReport& report, std::string lock_sha256,
                       std::string verified_at) {
  const auto gpu_uuid = report.gpu_uuid.value_or("");
  Verified v{.lock_sha256 = std::move(lock_sha256),
             .verified_at = std::move(verified_at),
             .gpu = report.gpu.value_or(""),
             .compute_capability = report.compute_capability.value_or(""),
             .gpu_uuid_sha256 = gpu_uuid.empty() ? "" : core::sha256_hex(gpu_uuid),
             .driver = report.driver.value_or(""),
             .libraries = report.versions.value_or(fmt::format("CUDA runtime {}, cuDNN {}",
                                                               report.cuda_runtime.value_or("?"),
                                                               report.cudnn.value_or("?"))),
             .loaded = {},
             .gpu_seconds = report.gpu_seconds.value_or(0),
             .cpu_seconds = report.cpu_seconds.value_or(0),
             .speedup = speedup(report),
             .steps = report.steps.value_or(0)};
  for (const auto& library : report.libraries)
    v.loaded.push_back(library.path);
  return v;
}

Result<void> write_verified(const fs::path& prefix, const Verified& v) {
  Json out = {{"format", kFormat},
              {"lock_sha256", v.lock_sha256},
              {"verified_at", v.verified_at},
              {"gpu",
               {{"name", v.gpu},
                {"compute_capability", v.compute_capability},
                {"uuid_sha256", v.gpu_uuid_sha256}}},
              {"driver", v.driver},
              {"libraries", v.libraries},
              {"loaded", v.loaded},
              {"steps", v.steps},
              {"gpu_seconds", v.gpu_seconds},
              {"cpu_seconds", v.cpu_seconds},
              {"speedup", v.speedup ? Json(*v.speedup) : Json(nullptr)}};
  return sys::write_file_atomic(verified_path(prefix), out.dump(2) + "\n");
}

Result<std::optional<Verified>> read_verified(const fs::path& prefix) {
  const auto path = verified_path(prefix);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<Verified>{};
  auto text = sys::read_file(path);
  if (!text) return std::move(text).error();
  try {
    const auto in = Json::parse(*text);
    if (in.at("format").get<int>() != kFormat) {
      return Error::input(fmt::format("{}: format {} is not one this envkit reads", path.string(),
                                      in.at("format").dump()));
    }
    Verified v;
    v.lock_sha256 = in.at("lock_sha256").get<std::string>();
    v.verified_at = in.at("verified_at").get<std::string>();
    const auto& gpu = in.at("gpu");
    v.gpu = gpu.at("name").get<std::string>();
    v.compute_capability = gpu.at("compute_capability").get<std::string>();
    v.gpu_uuid_sha256 = gpu.at("uuid_sha256").get<std::string>();
    v.driver = in.at("driver").get<std::string>();
    v.libraries = in.at("libraries").get<std::string>();
    v.loaded = in.at("loaded").get<std::vector<std::string>>();
    v.steps = in.at("steps").get<long>();
    v.gpu_seconds = in.at("gpu_seconds").get<double>();
    v.cpu_seconds = in.at("cpu_seconds").get<double>();
    if (!in.at("speedup").is_null()) v.speedup = in.at("speedup").get<double>();
    return std::optional<Verified>{std::move(v)};
  } catch (const nlohmann::json::exception& e) {
    return Error::input(fmt::format("{} is damaged", path.string()))
        .because(e.what())
        .hint("delete it; the next passing `envkit smoke` on a GPU writes it again");
  }
}

std::string describe(const Verified& v) {
  return fmt::format(
      "passed on {} (compute capability {}), driver CUDA {}, {}: {} steps{}", v.gpu,
      v.compute_capability, v.driver, v.verified_at, v.steps,
      v.speedup ? fmt::format(", {:.1f}x faster than the CPU reference", *v.speedup) : "");
}

std::string lock_sha256(const fs::path& lock_path) {
  auto text = sys::read_file(lock_path);
  return text ? core::sha256_hex(*text) : "";
}

}  // namespace envkit::smoke
