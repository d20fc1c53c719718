// Fuzz target: the recipe database's files (recipes::read_facts, then
// read_artifacts). The input is a facts file, optionally followed by a NUL and
// an artifacts file for it. Facts that read must write facts that read again,
// to the same text: `recipes import` writes what `lock` reads.

#include "envkit/recipes/recipe_io.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envkit;
  const auto [facts_text, artifacts_text] = fuzz::split_at_nul(fuzz::text_of(data, size));
  auto recipe = recipes::read_facts(facts_text, "fuzz.yaml");
  if (!recipe) {
    fuzz::check_refusal(recipe.error());
    return 0;
  }
  const std::string written = recipes::write_facts(*recipe);
  auto again = recipes::read_facts(written, "fuzz.yaml (written)");
  if (!again) {
    fuzz::finding("recipe facts that were read write facts that are refused",
                  again.error().to_string() + "\n" + written);
  }
  if (const std::string rewritten = recipes::write_facts(*again); rewritten != written) {
    fuzz::finding("writing recipe facts is not a fixpoint",
                  fuzz::first_difference(written, rewritten));
  }
  if (artifacts_text.empty()) return 0;
  if (auto read = recipes::read_artifacts(artifacts_text, "fuzz/1.0.yaml", *recipe); !read) {
    fuzz::check_refusal(read.error());
    return 0;
  }
  for (const auto& version : recipe->versions) {
    (void)recipes::write_artifacts(version, recipes::ArtifactSet::offline);
    (void)recipes::write_artifacts(version, recipes::ArtifactSet::wheels);
  }
  return 0;
}
