#include "envkit/specs/version.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "envkit/core/text.hpp"

namespace envkit::specs {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alnum(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_separator(char c) {
  return c == '.' || c == '_' || c == '-';
}
char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// A cursor over the version text that mirrors PEP 440's regular expression.
class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  [[nodiscard]] bool done() const { return pos_ == s_.size(); }
  [[nodiscard]] std::size_t pos() const { return pos_; }
  void reset(std::size_t pos) { pos_ = pos; }
  [[nodiscard]] char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0';
  }
  bool eat(char c) {
    if (lower(peek()) != c) return false;
    ++pos_;
    return true;
  }
  bool eat_separator() {
    if (!is_separator(peek())) return false;
    ++pos_;
    return true;
  }
  // The first keyword of `words` found here (case-insensitive); longer
  // spellings are listed first, as in PEP 440's alternations.
  std::string_view eat_keyword(std::span<const std::string_view> words) {
    for (auto word : words) {
      if (s_.size() - pos_ >= word.size() && text::iequals(s_.substr(pos_, word.size()), word)) {
        pos_ += word.size();
        return word;
      }
    }
    return {};
  }
  // Digits as a number; nullopt when there are none. Sets `overflow` when
  // the number does not fit 64 bits.
  std::optional<std::uint64_t> eat_number(bool& overflow) {
    if (!is_digit(peek())) return std::nullopt;
    std::uint64_t value = 0;
    while (is_digit(peek())) {
      const auto digit = static_cast<std::uint64_t>(peek() - '0');
      if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) overflow = true;
      value = value * 10 + digit;
      ++pos_;
    }
    return value;
  }
  [[nodiscard]] std::string_view rest() const { return s_.substr(pos_); }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

constexpr std::array<std::string_view, 8> kPreWords = {"alpha",   "a",   "beta", "b",
                                                       "preview", "pre", "c",    "rc"};
constexpr std::array<std::string_view, 3> kPostWords = {"post", "rev", "r"};
constexpr std::array<std::string_view, 1> kDevWords = {"dev"};

Version::PreKind pre_kind(std::string_view word) {
  if (word == "alpha" || word == "a") return Version::PreKind::alpha;
  if (word == "beta" || word == "b") return Version::PreKind::beta;
  return Version::PreKind::rc;  // c, rc, pre, preview
}

std::string_view pre_letter(Version::PreKind kind) {
  switch (kind) {
    case Version::PreKind::alpha:
      return "a";
    case Version::PreKind::beta:
      return "b";
    case Version::PreKind::rc:
      return "rc";
  }
  return "rc";
}

// `[._-]? keyword [._-]? digits*`; returns the keyword found and its number.
struct Tagged {
  std::string_view word;
  std::uint64_t number = 0;
};
std::optional<Tagged> eat_tagged(Scanner& scan, std::span<const std::string_view> words,
                                 bool& overflow) {
  const auto start = scan.pos();
  scan.eat_separator();
  const auto word = scan.eat_keyword(words);
  if (word.empty()) {
    scan.reset(start);
    return std::nullopt;
  }
  scan.eat_separator();
  const auto number = scan.eat_number(overflow);
  return Tagged{word, number.value_or(0)};
}

// Local segments compare: strings before numbers, numbers numerically,
// strings lexicographically, a shorter list first when it is a prefix.
int compare_local_part(const std::string& a, const std::string& b) {
  const bool a_num = std::all_of(a.begin(), a.end(), is_digit);
  const bool b_num = std::all_of(b.begin(), b.end(), is_digit);
  if (a_num != b_num) return a_num ? 1 : -1;
  if (a_num && a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

std::string strip_leading_zeros(std::string_view digits) {
  const auto first = digits.find_first_not_of('0');
  return first == std::string_view::npos ? std::string("0") : std::string(digits.substr(first));
}

std::size_t trimmed_size(const std::vector<std::uint64_t>& release) {
  std::size_t n = release.size();
  while (n > 0 && release[n - 1] == 0)
    --n;
  return n;
}

// The six-number suffix of PEP 440's sort key (see packaging's _cmpkey):
// (pre_rank, pre_n, post_rank, post_n, dev_rank, dev_n).
std::array<std::uint64_t, 6> suffix_key(const Version& v) {
  // Ranks are shifted by one so every entry is unsigned: dev-only 0, a 1, b 2, rc 3, none 4.
  std::uint64_t pre_rank = 4, pre_n = 0;
  if (!v.pre() && !v.post() && v.dev()) {
    pre_rank = 0;
  } else if (v.pre()) {
    pre_rank = static_cast<std::uint64_t>(v.pre()->kind) + 1;
    pre_n = v.pre()->number;
  }
  return {pre_rank,           pre_n, v.post() ? 1u : 0u, v.post().value_or(0), v.dev() ? 0u : 1u,
          v.dev().value_or(0)};
}

}  // namespace

Result<Version> Version::parse(std::string_view text) {
  const std::string_view s = text::trim(text);
  const auto invalid = [&](std::string_view why) {
    return Error::input(fmt::format("{} is not a valid version", text::quoted(text)))
        .because(std::string(why));
  };
  if (s.empty()) return invalid("it is empty");

  Version v;
  v.original_ = std::string(s);
  Scanner scan(s);
  bool overflow = false;
  scan.eat('v');

  // Epoch: digits then `!`; otherwise the digits start the release.
  const auto after_v = scan.pos();
  if (auto epoch = scan.eat_number(overflow); epoch && scan.eat('!')) {
    v.epoch_ = *epoch;
  } else {
    scan.reset(after_v);
  }

  auto first = scan.eat_number(overflow);
  if (!first) {
    return invalid(scan.done()
                       ? "it has no release number"
                       : fmt::format("expected a release number at {}", text::quoted(scan.rest())));
  }
  v.release_.push_back(*first);
  while (scan.peek() == '.' && is_digit(scan.peek(1))) {
    scan.eat('.');
    v.release_.push_back(*scan.eat_number(overflow));
  }

  if (auto pre = eat_tagged(scan, kPreWords, overflow)) {
    v.pre_ = Pre{pre_kind(pre->word), pre->number};
  }
  // Post: `-N` (implicit post release) or `[._-]? (post|rev|r) [._-]? N?`.
  const auto before_post = scan.pos();
  bool implicit_post = false;
  if (scan.peek() == '-' && is_digit(scan.peek(1))) {
    scan.eat('-');
    v.post_ = scan.eat_number(overflow);
    implicit_post = true;
  }
  if (!implicit_post) {
    scan.reset(before_post);
    if (auto post = eat_tagged(scan, kPostWords, overflow)) v.post_ = post->number;
  }
  if (auto dev = eat_tagged(scan, kDevWords, overflow)) v.dev_ = dev->number;

  if (scan.eat('+')) {
    const auto local_text = scan.rest();
    std::size_t i = 0;
    std::string part;
    const auto flush = [&] {
      const bool numeric = std::all_of(part.begin(), part.end(), is_digit);
      v.local_.push_back(numeric ? strip_leading_zeros(part) : part);
      part.clear();
    };
    for (; i < local_text.size(); ++i) {
      const char c = local_text[i];
      if (is_alnum(c)) {
        part += lower(c);
      } else if (is_separator(c) && !part.empty() && i + 1 < local_text.size() &&
                 is_alnum(local_text[i + 1])) {
        flush();
      } else {
        break;
      }
    }
    if (part.empty() || i != local_text.size()) {
      return invalid(fmt::format("the local part {} must be letters and digits joined by `.`",
                                 text::quoted(local_text)));
    }
    flush();
    scan.reset(s.size());
  }

  if (!scan.done()) {
    return invalid(fmt::format("unexpected {} after {}", text::quoted(scan.rest()),
                               text::quoted(s.substr(0, scan.pos()))));
  }
  if (overflow) return invalid("a number in it does not fit in 64 bits");
  return v;
}

Version Version::from_release(std::vector<std::uint64_t> release) {
  Version v;
  v.release_ = std::move(release);
  if (v.release_.empty()) v.release_.push_back(0);
  v.original_ = v.to_string();
  return v;
}

std::string Version::to_string() const {
  std::string out;
  if (epoch_ != 0) out = fmt::format("{}!", epoch_);
  for (std::size_t i = 0; i < release_.size(); ++i) {
    if (i) out += '.';
    out += fmt::to_string(release_[i]);
  }
  if (pre_) out += fmt::format("{}{}", pre_letter(pre_->kind), pre_->number);
  if (post_) out += fmt::format(".post{}", *post_);
  if (dev_) out += fmt::format(".dev{}", *dev_);
  if (!local_.empty()) {
    out += '+';
    for (std::size_t i = 0; i < local_.size(); ++i) {
      if (i) out += '.';
      out += local_[i];
    }
  }
  return out;
}

Version Version::public_version() const {
  return without_local();
}

Version Version::base_version() const {
  Version v;
  v.epoch_ = epoch_;
  v.release_ = release_;
  v.original_ = v.to_string();
  return v;
}

Version Version::with_release(std::vector<std::uint64_t> release) const {
  Version v = *this;
  v.release_ = std::move(release);
  if (v.release_.empty()) v.release_.push_back(0);
  v.original_ = v.to_string();
  return v;
}

Version Version::with_pre(std::optional<Pre> pre) const {
  Version v = *this;
  v.pre_ = pre;
  v.original_ = v.to_string();
  return v;
}

Version Version::with_post(std::optional<std::uint64_t> post) const {
  Version v = *this;
  v.post_ = post;
  v.original_ = v.to_string();
  return v;
}

Version Version::with_dev(std::optional<std::uint64_t> dev) const {
  Version v = *this;
  v.dev_ = dev;
  v.original_ = v.to_string();
  return v;
}

Version Version::without_local() const {
  if (local_.empty()) return *this;
  Version v = *this;
  v.local_.clear();
  v.original_ = v.to_string();
  return v;
}

std::strong_ordering Version::operator<=>(const Version& other) const {
  if (auto c = epoch_ <=> other.epoch_; c != 0) return c;
  const auto n = trimmed_size(release_), m = trimmed_size(other.release_);
  for (std::size_t i = 0; i < std::min(n, m); ++i) {
    if (auto c = release_[i] <=> other.release_[i]; c != 0) return c;
  }
  if (auto c = n <=> m; c != 0) return c;
  if (auto c = suffix_key(*this) <=> suffix_key(other); c != 0) return c;
  for (std::size_t i = 0; i < std::min(local_.size(), other.local_.size()); ++i) {
    if (int c = compare_local_part(local_[i], other.local_[i]); c != 0) {
      return c < 0 ? std::strong_ordering::less : std::strong_ordering::greater;
    }
  }
  return local_.size() <=> other.local_.size();
}

}  // namespace envkit::specs
