#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "envkit/core/result.hpp"
#include "envkit/recipes/database.hpp"
#include "envkit/solve/pubgrub.hpp"
#include "envkit/solve/solve.hpp"

// The PubGrub provider for one request: the recipe database's packages, as
// candidates on the request's platform, plus the machine's facts.
namespace envkit::solve {

inline constexpr std::string_view kDriverPackage = "__driver";
inline constexpr std::string_view kGlibcPackage = "__glibc";

enum class PackageKind : std::uint8_t {
  root,      // the project (envkit.yaml)
  recipe,    // a package of the recipe database
  external,  // provided by the machine (envkit.yaml external:)
  driver,    // the virtual package __driver: one candidate, the machines' lowest driver
  glibc,     // the virtual package __glibc: one candidate, the machines' lowest glibc
  missing,   // required, but not in the recipe database: no candidates
};

struct CandidateInfo {
  specs::Version version;
  const recipes::Build* build = nullptr;  // null: no build on the platform, or not in the database
  std::string build_id;
  bool on_platform = true;
  std::size_t version_rank = 0;  // 0 for the oldest version; builds of one version share it
  std::map<std::string, specs::VersionSpec> requirements;  // on the platform, __driver included
  bool driver_through_compat = false;  // the __driver minimum is the minor-version-compat one
  bool installable = true;  // envkit can install it on the platform (recipes::installable_on)
};

struct PackageInfo {
  std::string name;
  PackageKind kind = PackageKind::recipe;
  std::vector<CandidateInfo> candidates;  // by version, then build id
  std::optional<std::string> external;    // how the machine provides it
  [[nodiscard]] bool is_framework() const;
  // Several candidates share `version_rank` (so names need the build id).
  [[nodiscard]] bool has_several_builds(std::size_t version_rank) const;
};

// What a stated incompatibility means, for explanations.
struct Fact {
  enum class Kind : std::uint8_t {
    requirement,  // `package` (candidates `set`) requires `dependency` `spec`
    platform,     // candidates have nothing for the request's platform
    gpu,          // candidates have no code for gpu number `gpu`
    unavailable,  // request().unavailable[`unavailable`] rules the candidate out
  };
  Kind kind = Kind::requirement;
  PackageId package = 0;
  PackageId dependency = 0;
  specs::VersionSpec spec;
  std::string origin;  // for the root's requirements: "framework" or "requires"
  // For a root requirement written in a requirement file: its line, which states it.
  std::optional<WrittenAt> written_at;
  std::size_t gpu = 0;
  std::size_t unavailable = 0;
  bool driver_through_compat = false;
};

class Problem final : public Provider {
 public:
  [[nodiscard]] static Result<std::unique_ptr<Problem>> create(const recipes::Database& database,
                                                               const Request& request);

  [[nodiscard]] PackageId root() const override { return 0; }
  [[nodiscard]] std::size_t candidate_count(PackageId package) const override {
    return packages_[package].candidates.size();
  }
  void facts_about(PackageId package, std::vector<Incompatibility>& out) override;
  void dependencies_of(PackageId package, Candidate candidate,
                       std::vector<Incompatibility>& out) override;
  [[nodiscard]] int priority(PackageId package) const override;
  [[nodiscard]] Candidate choose(PackageId package, const VersionSet& allowed,
                                 std::span<const Decision> decided) override;

  [[nodiscard]] const Request& request() const { return request_; }
  [[nodiscard]] const PackageInfo& package(PackageId id) const { return packages_[id]; }
  [[nodiscard]] std::size_t package_count() const { return packages_.size(); }
  [[nodiscard]] std::optional<PackageId> find(std::string_view name) const;
  [[nodiscard]] const Fact& fact(std::uint32_t id) const { return facts_[id]; }
  [[nodiscard]] std::size_t fact_count() const { return facts_.size(); }
  // The candidates of `dependency` a requirement's spec allows.
  [[nodiscard]] VersionSet allowed_by(PackageId dependency, const specs::VersionSpec& spec) const;
  // Why choose() picked what it picked last for `package` (for `envkit why`).
  [[nodiscard]] const std::string& preference(PackageId package) const;
  [[nodiscard]] bool driver_runs_natively(const CandidateInfo& cuda) const;

 private:
  Problem(const recipes::Database& database, Request request);
  [[nodiscard]] Result<PackageId> add_package(const std::string& name);
  [[nodiscard]] Result<void> add_candidates(PackageInfo& info, const recipes::Recipe& recipe);
  void add_driver_requirement(CandidateInfo& candidate) const;
  void add_glibc_requirement(CandidateInfo& candidate) const;
  [[nodiscard]] bool runs_everywhere(const CandidateInfo& candidate) const;
  [[nodiscard]] bool driver_runs(const CandidateInfo& cuda) const;
  // How good a framework build is: the newest CUDA it can use, native first.
  [[nodiscard]] std::tuple<int, int, long> build_rank(const CandidateInfo& framework) const;
  [[nodiscard]] bool tested_with(PackageId package, const CandidateInfo& candidate,
                                 std::span<const Decision> decided, std::string& by) const;
  // When no CUDA the decided framework allows can be installed here: the nearest newer
  // release of that framework that allows one, in words; "" when there is none.
  [[nodiscard]] std::string installable_framework(std::span<const Decision> decided) const;
  std::uint32_t add_fact(Fact fact);

  const recipes::Database& database_;
  Request request_;
  std::vector<PackageInfo> packages_;
  std::vector<Fact> facts_;
  std::set<std::tuple<PackageId, std::string, std::string>> stated_;  // requirements already given
  std::map<PackageId, std::string> preferences_;
};

}  // namespace envkit::solve
