#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

// `envkit smoke --framework`: the prefix's own Python trains a small network
// with PyTorch or TensorFlow (share/envkit/smoke/framework_smoke.py).
namespace envkit::smoke {

struct FrameworkResult {
  std::string status;  // pass, fail or skip
  std::string reason;
  // The script's JSON object; for a skip or failure envkit saw itself,
  // {"status", "reason"} made here.
  std::string json;
};

struct FrameworkOptions {
  std::filesystem::path prefix;
  std::filesystem::path script;  // framework_smoke.py
  bool cpu_only = false;
  std::map<std::string, std::optional<std::string>> environment;  // the prefix's
};

// Runs the script with the prefix's bin/python3. A prefix without its own
// Python skips (the framework part needs one); so does one where neither
// framework is installed. Never an error: what went wrong is in the result.
[[nodiscard]] FrameworkResult run_framework_smoke(const FrameworkOptions& options);

}  // namespace envkit::smoke
