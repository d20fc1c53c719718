#include "envkit/recipes/import_torch_kernels.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "envkit/core/csv.hpp"
#include "envkit/core/text.hpp"

namespace envkit::recipes {

namespace {

using specs::ComputeCapability;
using specs::Version;

struct ArchList {
  std::vector<ComputeCapability> sass;
  std::vector<ComputeCapability> ptx;
};

// "5.0;6.0;7.0;12.0+PTX" -> SASS 5.0 6.0 7.0 12.0, PTX 12.0 (CMake's and PyTorch's
// spelling: `+PTX` adds the virtual architecture's PTX to its SASS).
Result<ArchList> parse_arch_list(std::string_view cell) {
  ArchList out;
  for (auto item : text::split(cell, ';')) {
    item = text::trim(item);
    const bool ptx = item.ends_with("+PTX");
    if (ptx) item.remove_suffix(4);
    auto arch = ComputeCapability::parse(item);
    if (!arch) return std::move(arch).error();
    out.sass.push_back(*arch);
    if (ptx) out.ptx.push_back(*arch);
  }
  if (out.sass.empty())
    return Error::input(fmt::format("no architectures in {}", text::quoted(cell)));
  return out;
}

// `2.8` names the release line (2.8, 2.8.0, 2.8.1); `1.8.2` names that release.
bool names(const Version& row, const Version& version) {
  if (row.release().size() == 2) return version.major_minor() == row;
  return version == row;
}

}  // namespace

Result<void> add_torch_kernel_archs(Recipe& torch, const SourceText& arch_lists) {
  auto table = csv::Table::parse(arch_lists.text, arch_lists.file,
                                 {"torch", "cuda", "platform", "torch_cuda_arch_list",
                                  "source_repo", "source_path", "source_commit"});
  if (!table) return std::move(table).error();
  for (const auto& row : table->rows()) {
    const auto fail = [&](std::string why) { return table->row_error(row, std::move(why)); };
    auto release = Version::parse(text::trim(table->at(row, "torch")));
    auto cuda = Version::parse(text::trim(table->at(row, "cuda")));
    if (!release || !cuda || cuda->release().size() < 2)
      return fail("cannot read the torch release or the CUDA version");
    if (text::trim(table->at(row, "platform")) != "linux-x86_64") {
      return fail(fmt::format("platform {}: only linux-x86_64 build scripts are read",
                              text::quoted(table->at(row, "platform"))));
    }
    auto archs = parse_arch_list(table->at(row, "torch_cuda_arch_list"));
    if (!archs) return fail(archs.error().message());
    const auto id = fmt::format("cu{}{}", cuda->major(), cuda->minor());
    bool matched = false;
    for (auto& version : torch.versions) {
      if (!names(*release, version.version)) continue;
      for (auto& build : version.builds) {
        if (build.id != id) continue;
        build.cuda_arch = archs->sass;
        build.cuda_ptx = archs->ptx;
        matched = true;
      }
    }
    if (!matched) {
      return fail(fmt::format("torch {} has no build {} in the database", release->original(), id));
    }
  }
  torch.sources.emplace_back(arch_lists.file);
  return {};
}

}  // namespace envkit::recipes
