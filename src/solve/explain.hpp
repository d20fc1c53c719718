#pragma once

#include <string>
#include <vector>

#include "envkit/solve/pubgrub.hpp"
#include "problem.hpp"

// Putting PubGrub's incompatibilities into words a GPU user acts on.
namespace envkit::solve {

class Describer {
 public:
  explicit Describer(const Problem& problem);

  // "cuda 9.0.176", "torch 2.4.1 (cu121)", "cuda >=12.0.0,<=12.9.1",
  // "cuda ==9.0.*" (a set a requirement stated), "every cuda version".
  [[nodiscard]] std::string candidates(PackageId package, const VersionSet& set) const;
  // One incompatibility as a clause, without a final period.
  [[nodiscard]] std::string incompatibility(const Incompatibility& incompatibility) const;

 private:
  [[nodiscard]] std::string fact(const Incompatibility& incompatibility, const Fact& fact) const;
  [[nodiscard]] std::string requirement(const Fact& fact) const;
  [[nodiscard]] std::string nothing_satisfies(const Fact& fact) const;
  [[nodiscard]] std::string unsupported_gpu(PackageId package, const VersionSet& set,
                                            std::size_t gpu) const;
  [[nodiscard]] std::string derived(const Incompatibility& incompatibility) const;
  [[nodiscard]] std::string ranges(PackageId package, const VersionSet& set) const;

  struct Label {
    PackageId package;
    VersionSet set;
    std::string spec;
  };
  const Problem& problem_;
  std::vector<Label> labels_;
};

// The derivation of a failure as numbered sentences, the way pub reports them
// ("Because A and B, C."), ending with the conclusion.
[[nodiscard]] std::vector<std::string> explain_failure(const Problem& problem,
                                                       const PubGrubResult& result);

// Why each decided package has its version: the requirements and facts that
// narrowed it, then the preference that chose it.
// `describer` is built once per solution (it indexes the stated requirements).
[[nodiscard]] std::vector<std::string> explain_choice(const Problem& problem,
                                                      const Describer& describer,
                                                      const PubGrubResult& result,
                                                      PackageId package);

}  // namespace envkit::solve
