#include "envkit/recipes/import_torch_kernels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

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

// How a row's list was found: read from a build script's TORCH_CUDA_ARCH_LIST, or from
// the fatbins of a released wheel's libtorch_cuda.so (`envkit debug fatbin`), in which case
// `source_commit` is the wheel's sha256 and `source_ref` its URL.
Result<void> check_method(const csv::Table& table, const csv::Row& row) {
  const auto method = text::trim(table.at(row, "method"));
  if (method == "build-script") return {};
  if (method != "fatbin") {
    return table.row_error(
        row, fmt::format("method {}: expected build-script or fatbin", text::quoted(method)));
  }
  const auto sha256 = text::trim(table.at(row, "source_commit"));
  if (sha256.size() != 64 || !std::all_of(sha256.begin(), sha256.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      })) {
    return table.row_error(row, "a fatbin row's source_commit must be the wheel's sha256");
  }
  return {};
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
                                  "source_repo", "source_path", "source_commit", "method"});
  if (!table) return std::move(table).error();
  // Several rows may name one build (each wheel of a release line read): they must agree.
  std::map<const Build*, int> set_by;
  for (const auto& row : table->rows()) {
    const auto fail = [&](std::string why) { return table->row_error(row, std::move(why)); };
    if (auto method = check_method(*table, row); !method) return std::move(method).error();
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
        const auto [earlier, first] = set_by.emplace(&build, row.line);
        if (!first && (build.cuda_arch != archs->sass || build.cuda_ptx != archs->ptx)) {
          return fail(fmt::format("torch {} ({}): the list differs from line {}'s",
                                  version.version.original(), id, earlier->second));
        }
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
