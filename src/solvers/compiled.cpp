// Compiling a solve's programs with their invariants apart, and the
// finiteness scan (compiled.h).
#include "solvers/compiled.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>

namespace proxc::internal {

// Compiles the programs with their invariants apart, all at once
// (Backend::compile_many).
std::vector<std::unique_ptr<InvariantStep>> compile_hoisted(Backend& backend,
                                                            const std::vector<StepProgram>& programs) {
  std::vector<HoistSplit> splits;
  std::vector<const StepProgram*> all;
  for (const StepProgram& p : programs) splits.push_back(hoist_invariants(p));
  for (const HoistSplit& h : splits) {
    all.push_back(&h.rest);
    if (!h.setup.outputs.empty()) all.push_back(&h.setup);
  }
  auto compiled = backend.compile_many(all);
  std::vector<std::unique_ptr<InvariantStep>> out;
  size_t k = 0;
  for (const HoistSplit& h : splits) {
    auto step = std::move(compiled[k++]);
    std::unique_ptr<CompiledStep> setup;
    if (!h.setup.outputs.empty()) setup = std::move(compiled[k++]);
    out.push_back(std::make_unique<InvariantStep>(std::move(step), std::move(setup), h.rest.name));
  }
  return out;
}

namespace {

// Whether no value of d[0, n) is inf or NaN (exponent bits all ones): adding
// one to the exponent field carries into the sign bit only then. AND, ADD and
// OR on 32-bit integers, which the compiler vectorizes with plain SSE2.
bool all_finite(const float* d, size_t n) {
  uint32_t carry = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, d + i, sizeof bits);
    carry |= (bits & 0x7f800000u) + 0x00800000u;
  }
  return (carry & 0x80000000u) == 0;
}

}  // namespace

// Whether every array is finite. A check scans the whole state, which at
// 512² took about half as long as the check's pipeline on one core: large
// states are scanned in slices on every core.
bool all_finite(const std::map<std::string, Array>& arrays) {
  size_t total = 0;
  for (const auto& [name, a] : arrays) total += a.data.size();
  const size_t threads = total < (size_t{1} << 20) ? 1 : std::max(1u, std::thread::hardware_concurrency());
  // Slices of about total / threads values; thread t scans slices t, t + threads, ...
  const size_t per = std::max<size_t>(1, (total + threads - 1) / threads);
  std::vector<std::pair<const float*, size_t>> slices;
  for (const auto& [name, a] : arrays) {
    for (size_t at = 0; at < a.data.size(); at += per)
      slices.push_back({a.data.data() + at, std::min(per, a.data.size() - at)});
  }
  auto scan = [&slices, threads](size_t t) {
    for (size_t k = t; k < slices.size(); k += threads) {
      if (!all_finite(slices[k].first, slices[k].second)) return false;
    }
    return true;
  };
  std::vector<std::future<bool>> others;
  for (size_t t = 1; t < threads; ++t) others.push_back(std::async(std::launch::async, scan, t));
  bool finite = scan(0);
  for (auto& f : others) finite = f.get() && finite;
  return finite;
}

}  // namespace proxc::internal
