#include "envkit/solve/version_set.hpp"

#include <bit>
#include <cassert>

namespace envkit::solve {

namespace {
constexpr std::size_t kBits = 64;
std::size_t words_for(std::size_t universe) {
  return (universe + kBits - 1) / kBits;
}
}  // namespace

VersionSet VersionSet::none(std::size_t universe) {
  VersionSet set;
  set.universe_ = universe;
  set.words_.assign(words_for(universe), 0);
  return set;
}

VersionSet VersionSet::all(std::size_t universe) {
  VersionSet set;
  set.universe_ = universe;
  set.words_.assign(words_for(universe), ~std::uint64_t{0});
  set.clear_tail();
  return set;
}

VersionSet VersionSet::only(std::size_t universe, std::size_t candidate) {
  auto set = none(universe);
  set.insert(candidate);
  return set;
}

void VersionSet::clear_tail() {
  if (const auto used = universe_ % kBits; used != 0 && !words_.empty()) {
    words_.back() &= (std::uint64_t{1} << used) - 1;
  }
}

bool VersionSet::contains(std::size_t candidate) const {
  return candidate < universe_ && ((words_[candidate / kBits] >> (candidate % kBits)) & 1U) != 0;
}

void VersionSet::insert(std::size_t candidate) {
  assert(candidate < universe_);
  words_[candidate / kBits] |= std::uint64_t{1} << (candidate % kBits);
}

void VersionSet::erase(std::size_t candidate) {
  assert(candidate < universe_);
  words_[candidate / kBits] &= ~(std::uint64_t{1} << (candidate % kBits));
}

bool VersionSet::empty() const {
  for (const auto word : words_) {
    if (word != 0) return false;
  }
  return true;
}

bool VersionSet::full() const {
  return count() == universe_;
}

std::size_t VersionSet::count() const {
  std::size_t n = 0;
  for (const auto word : words_)
    n += static_cast<std::size_t>(std::popcount(word));
  return n;
}

std::optional<std::size_t> VersionSet::lowest() const {
  for (std::size_t i = 0; i < words_.size(); ++i) {
    if (words_[i] != 0) return i * kBits + static_cast<std::size_t>(std::countr_zero(words_[i]));
  }
  return std::nullopt;
}

std::optional<std::size_t> VersionSet::highest() const {
  for (std::size_t i = words_.size(); i-- > 0;) {
    if (words_[i] != 0) {
      return i * kBits + (kBits - 1) - static_cast<std::size_t>(std::countl_zero(words_[i]));
    }
  }
  return std::nullopt;
}

std::vector<std::size_t> VersionSet::members() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < words_.size(); ++i) {
    for (auto word = words_[i]; word != 0; word &= word - 1) {
      out.push_back(i * kBits + static_cast<std::size_t>(std::countr_zero(word)));
    }
  }
  return out;
}

VersionSet VersionSet::operator&(const VersionSet& other) const {
  assert(universe_ == other.universe_);
  auto out = *this;
  for (std::size_t i = 0; i < words_.size(); ++i)
    out.words_[i] &= other.words_[i];
  return out;
}

VersionSet VersionSet::operator|(const VersionSet& other) const {
  assert(universe_ == other.universe_);
  auto out = *this;
  for (std::size_t i = 0; i < words_.size(); ++i)
    out.words_[i] |= other.words_[i];
  return out;
}

VersionSet VersionSet::operator-(const VersionSet& other) const {
  assert(universe_ == other.universe_);
  auto out = *this;
  for (std::size_t i = 0; i < words_.size(); ++i)
    out.words_[i] &= ~other.words_[i];
  return out;
}

VersionSet VersionSet::complement() const {
  auto out = *this;
  for (auto& word : out.words_)
    word = ~word;
  out.clear_tail();
  return out;
}

bool VersionSet::subset_of(const VersionSet& other) const {
  assert(universe_ == other.universe_);
  for (std::size_t i = 0; i < words_.size(); ++i) {
    if ((words_[i] & ~other.words_[i]) != 0) return false;
  }
  return true;
}

bool VersionSet::disjoint(const VersionSet& other) const {
  assert(universe_ == other.universe_);
  for (std::size_t i = 0; i < words_.size(); ++i) {
    if ((words_[i] & other.words_[i]) != 0) return false;
  }
  return true;
}

}  // namespace envkit::solve
