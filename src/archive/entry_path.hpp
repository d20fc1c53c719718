#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "envkit/core/result.hpp"

// Lexical checks on the names stored in an archive: the first line of defence
// (the writer's O_NOFOLLOW walk is the second). Errors carry the refusal's
// reason as their message.
namespace envkit::archive::detail {

using Components = std::vector<std::string>;

// Linux's PATH_MAX: longer entry names are refused.
inline constexpr std::size_t kMaxPath = 4096;

// A stored entry name as its components, `.` and empty parts dropped
// (`./lib//x.so` -> lib, x.so). Refuses absolute names and any `..`: a `..`
// is never needed inside an archive, and checking only whether it climbs out
// would trust every folder on the way to be a real folder. Refuses names of
// kMaxPath bytes or more.
[[nodiscard]] Result<Components> split_entry_path(std::string_view name);

// `parts` joined with '/'.
[[nodiscard]] std::string join_path(std::span<const std::string> parts);

// A symlink at `link_dir`/NAME (relative to the destination) may point to
// `target` when the target is relative and stays inside the destination.
// `..` is allowed only at the start of the target: after a name it would step
// back out of whatever that name is, and if the name is itself a link the
// kernel climbs from the link's target, not from where the text suggests.
[[nodiscard]] Result<void> check_link_target(std::span<const std::string> link_dir,
                                             std::string_view target);

}  // namespace envkit::archive::detail
