#pragma once

// Running independent tasks on a few threads (the store's fills, export's layers).

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace envkit::sys {

// Calls task(i) for every i in [0, count) on up to `jobs` threads (this one
// among them), each taking the next index as it finishes one: a slow task
// does not hold back the others. Returns when every task has returned.
template <class Task>
void for_each_parallel(std::size_t count, int jobs, const Task& task) {
  if (count == 0) return;
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < count; i = next++)
      task(i);
  };
  const auto workers =
      std::clamp<std::size_t>(static_cast<std::size_t>(std::max(jobs, 1)), 1, count);
  std::vector<std::jthread> threads;
  for (std::size_t i = 1; i < workers; ++i)
    threads.emplace_back(work);
  work();
}

}  // namespace envkit::sys
