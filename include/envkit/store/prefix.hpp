#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "envkit/core/result.hpp"
#include "envkit/store/records.hpp"
#include "envkit/sys/file_lock.hpp"

// A prefix is a symlink to its current generation:
//   PARENT/NAME -> .NAME.generations/<N>      (relative, so the project can move)
//   PARENT/.NAME.generations/<N>/             bin/ include/ lib/ ... and .envkit/ receipts
//   PARENT/.NAME.lock                         held by the envkit changing it
// A new generation is built beside the current one and committed by renaming
// a new symlink over the old one, so a reader (or a `kill -9`) sees the old
// environment or the new, never a mix.
namespace envkit::store {

// The link mode an exported image's state.json records (`envkit export`): its
// files came out of image layers, at /opt/envkit, with no generations beside
// it. Such a prefix is read (doctor, list, run) where it is, never changed.
inline constexpr std::string_view kImageLinkMode = "image";

class Prefix {
 public:
  // `path` need not exist; an existing directory not made by envkit is
  // refused unless it is empty.
  [[nodiscard]] static Result<Prefix> open(const std::filesystem::path& path);

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::filesystem::path generations_dir() const;
  [[nodiscard]] std::filesystem::path lock_path() const;

  // The generation the prefix points at, or nullopt (nothing installed yet).
  [[nodiscard]] std::optional<int> current_generation() const;
  [[nodiscard]] std::filesystem::path generation_root(int generation) const;
  // The current generation's state, or nullopt.
  [[nodiscard]] Result<std::optional<PrefixState>> state() const;

  // An empty folder for generation `generation`, leftovers removed.
  [[nodiscard]] Result<std::filesystem::path> begin(int generation) const;
  // Points the prefix at `generation` (atomically), then removes the others.
  [[nodiscard]] Result<void> commit(int generation) const;
  // Removes every generation but the current one (a crashed run's leftovers).
  void remove_stale_generations() const;

 private:
  explicit Prefix(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
  bool image_ = false;
};

}  // namespace envkit::store
