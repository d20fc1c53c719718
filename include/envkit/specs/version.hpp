#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

namespace envkit::specs {

// A PEP 440 version, ordered exactly as PEP 440 (and the `packaging` library)
// orders versions. Also used for GPU-world versions (driver 550.54.15, cuDNN
// 8.9.7.29): normalization turns `450.80.02` into `450.80.2`, so the text as
// written is kept in `original()` for display and lock files.
class Version {
 public:
  enum class PreKind : std::uint8_t { alpha, beta, rc };  // spelled a, b, rc
  struct Pre {
    PreKind kind;
    std::uint64_t number;
    friend bool operator==(const Pre&, const Pre&) = default;
  };

  // Parses and normalizes; surrounding whitespace is ignored. Numbers are
  // limited to 64 bits (PEP 440 sets no limit; no real version needs more).
  [[nodiscard]] static Result<Version> parse(std::string_view text);

  // A plain release version such as 12.4.1.
  [[nodiscard]] static Version from_release(std::vector<std::uint64_t> release);

  // The text as written (trimmed), e.g. "450.80.02" or "1.0RC1".
  [[nodiscard]] const std::string& original() const { return original_; }
  // The normalized form, e.g. "450.80.2" or "1.0rc1".
  [[nodiscard]] std::string to_string() const;

  [[nodiscard]] std::uint64_t epoch() const { return epoch_; }
  [[nodiscard]] const std::vector<std::uint64_t>& release() const { return release_; }
  [[nodiscard]] const std::optional<Pre>& pre() const { return pre_; }
  [[nodiscard]] const std::optional<std::uint64_t>& post() const { return post_; }
  [[nodiscard]] const std::optional<std::uint64_t>& dev() const { return dev_; }
  // Normalized local segments ("ubuntu", "1"), empty when there is no local part.
  [[nodiscard]] const std::vector<std::string>& local() const { return local_; }
  [[nodiscard]] bool has_local() const { return !local_.empty(); }

  // The i-th release number, 0 past the end (so 12 has minor() == 0).
  [[nodiscard]] std::uint64_t release_at(std::size_t i) const {
    return i < release_.size() ? release_[i] : 0;
  }
  [[nodiscard]] std::uint64_t major() const { return release_at(0); }
  [[nodiscard]] std::uint64_t minor() const { return release_at(1); }
  [[nodiscard]] std::uint64_t micro() const { return release_at(2); }
  // The release series, MAJOR.MINOR (12.4.1 -> 12.4, 12 -> 12.0).
  [[nodiscard]] Version major_minor() const { return from_release({major(), minor()}); }

  [[nodiscard]] bool is_prerelease() const { return pre_.has_value() || dev_.has_value(); }
  [[nodiscard]] bool is_postrelease() const { return post_.has_value(); }
  [[nodiscard]] bool is_devrelease() const { return dev_.has_value(); }

  // Without the local segment (1.0+cu121 -> 1.0).
  [[nodiscard]] Version public_version() const;
  // Epoch and release only (1!2.0rc1.post3 -> 1!2.0).
  [[nodiscard]] Version base_version() const;

  // Copies with one part replaced; used by specifier bounds.
  [[nodiscard]] Version with_release(std::vector<std::uint64_t> release) const;
  [[nodiscard]] Version with_pre(std::optional<Pre> pre) const;
  [[nodiscard]] Version with_post(std::optional<std::uint64_t> post) const;
  [[nodiscard]] Version with_dev(std::optional<std::uint64_t> dev) const;
  [[nodiscard]] Version without_local() const;

  // PEP 440 ordering: 1.0.dev0 < 1.0a1 < 1.0 < 1.0+local < 1.0.post1;
  // trailing zeros do not count (1.0 == 1.0.0).
  [[nodiscard]] std::strong_ordering operator<=>(const Version& other) const;
  [[nodiscard]] bool operator==(const Version& other) const {
    return (*this <=> other) == std::strong_ordering::equal;
  }

 private:
  Version() = default;

  std::string original_;
  std::uint64_t epoch_ = 0;
  std::vector<std::uint64_t> release_;
  std::optional<Pre> pre_;
  std::optional<std::uint64_t> post_;
  std::optional<std::uint64_t> dev_;
  std::vector<std::string> local_;
};

}  // namespace envkit::specs
