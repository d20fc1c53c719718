#pragma once

#include <map>
#include <string>
#include <vector>

#include "envkit/solve/pubgrub.hpp"

// A hand-made problem for the generic PubGrub core: named packages, each with
// candidate versions (oldest first), each candidate with requirements listed
// as the allowed versions of another package. Package 0 is the root.
namespace envkit::solve::testing {

struct TableProblem : Provider {
  struct Requirement {
    std::string package;
    std::vector<std::string> allowed;  // versions of `package`; empty: nothing satisfies it
  };

  std::vector<std::string> names{"root"};
  std::vector<std::vector<std::string>> versions{{"1"}};
  std::map<std::pair<PackageId, Candidate>, std::vector<Requirement>> requirements;
  std::map<PackageId, VersionSet> forbidden;

  PackageId package(const std::string& name, std::vector<std::string> candidate_versions) {
    names.push_back(name);
    versions.push_back(std::move(candidate_versions));
    return static_cast<PackageId>(names.size() - 1);
  }
  [[nodiscard]] PackageId id(const std::string& name) const {
    for (PackageId p = 0; p < names.size(); ++p) {
      if (names[p] == name) return p;
    }
    throw std::logic_error("no package " + name);
  }
  [[nodiscard]] Candidate candidate(PackageId p, const std::string& version) const {
    for (Candidate c = 0; c < versions[p].size(); ++c) {
      if (versions[p][c] == version) return c;
    }
    throw std::logic_error("no version " + version);
  }
  void require(const std::string& name, const std::string& version, Requirement requirement) {
    const auto p = id(name);
    requirements[{p, candidate(p, version)}].push_back(std::move(requirement));
  }

  [[nodiscard]] PackageId root() const override { return 0; }
  [[nodiscard]] std::size_t candidate_count(PackageId p) const override {
    return versions[p].size();
  }
  void facts_about(PackageId p, std::vector<Incompatibility>& out) override {
    if (const auto it = forbidden.find(p); it != forbidden.end() && !it->second.empty()) {
      out.push_back({{Term{p, true, it->second}}, {Cause::Kind::fact, 1000 + p}});
    }
  }
  void dependencies_of(PackageId p, Candidate c, std::vector<Incompatibility>& out) override {
    const auto it = requirements.find({p, c});
    if (it == requirements.end()) return;
    for (const auto& requirement : it->second) {
      const auto d = id(requirement.package);
      auto allowed = VersionSet::none(versions[d].size());
      for (const auto& v : requirement.allowed)
        allowed.insert(candidate(d, v));
      const Term depender{p, true, VersionSet::only(versions[p].size(), c)};
      if (allowed.empty()) {
        out.push_back({{depender}, {Cause::Kind::fact, 0}});
      } else {
        out.push_back({{depender, Term{d, false, allowed}}, {Cause::Kind::fact, 0}});
      }
    }
  }
  // Packages are decided in the order they were declared.
  [[nodiscard]] int priority(PackageId p) const override { return static_cast<int>(p); }
  // The newest allowed version, like a package manager would.
  [[nodiscard]] Candidate choose(PackageId, const VersionSet& allowed,
                                 std::span<const Decision>) override {
    return static_cast<Candidate>(*allowed.highest());
  }

  // name -> version of a solved outcome (the root left out).
  [[nodiscard]] std::map<std::string, std::string> chosen(const PubGrubResult& outcome) const {
    std::map<std::string, std::string> out;
    for (const auto& d : outcome.decisions) {
      if (d.package != 0) out[names[d.package]] = versions[d.package][d.candidate];
    }
    return out;
  }
};

}  // namespace envkit::solve::testing
