#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

// A set of candidates of one package. The recipe database is finite and known
// before solving, so every package's candidates are numbered 0..n-1 (oldest
// first) and a set of them is a bitset: intersection, union and complement
// are exact, which is what PubGrub's term algebra needs.
namespace envkit::solve {

class VersionSet {
 public:
  VersionSet() = default;
  [[nodiscard]] static VersionSet none(std::size_t universe);
  [[nodiscard]] static VersionSet all(std::size_t universe);
  [[nodiscard]] static VersionSet only(std::size_t universe, std::size_t candidate);

  [[nodiscard]] std::size_t universe() const { return universe_; }
  [[nodiscard]] bool contains(std::size_t candidate) const;
  void insert(std::size_t candidate);
  void erase(std::size_t candidate);

  [[nodiscard]] bool empty() const;
  [[nodiscard]] bool full() const;
  [[nodiscard]] std::size_t count() const;
  [[nodiscard]] std::optional<std::size_t> lowest() const;
  [[nodiscard]] std::optional<std::size_t> highest() const;
  // The members in ascending order.
  [[nodiscard]] std::vector<std::size_t> members() const;

  [[nodiscard]] VersionSet operator&(const VersionSet& other) const;
  [[nodiscard]] VersionSet operator|(const VersionSet& other) const;
  [[nodiscard]] VersionSet operator-(const VersionSet& other) const;
  [[nodiscard]] VersionSet complement() const;
  [[nodiscard]] bool subset_of(const VersionSet& other) const;
  [[nodiscard]] bool disjoint(const VersionSet& other) const;

  friend bool operator==(const VersionSet&, const VersionSet&) = default;

 private:
  void clear_tail();

  std::size_t universe_ = 0;
  std::vector<std::uint64_t> words_;  // bits at and past universe_ are always 0
};

}  // namespace envkit::solve
