#include "solvers/rank_agreement.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal {

namespace {

// Bits of a digest carried by one double of a sum: exact whatever the ranks.
constexpr int kChunkBits = 16;
constexpr int kChunks = 64 / kChunkBits;

uint64_t digest(const std::string& bytes) {
  const std::string h = content_hash(bytes);  // "xxh3-128:" + 32 hex digits
  return std::strtoull(h.substr(h.find(':') + 1, 16).c_str(), nullptr, 16);
}

}  // namespace

void check_ranks_agree(Communicator& comm, const std::vector<RankFacet>& facets) {
  // Rank 0's digests, to every rank: a sum to which only rank 0 gives.
  std::vector<uint64_t> mine;
  std::vector<double> zero(facets.size() * kChunks, 0.0);
  for (size_t f = 0; f < facets.size(); ++f) {
    mine.push_back(digest(facets[f].second));
    if (comm.rank() != 0) continue;
    for (int c = 0; c < kChunks; ++c) {
      zero[f * kChunks + c] = static_cast<double>((mine[f] >> (c * kChunkBits)) & ((1u << kChunkBits) - 1));
    }
  }
  comm.sum(zero.data(), zero.size());
  // How many ranks differ from rank 0, facet by facet.
  std::vector<double> differ(facets.size(), 0.0);
  for (size_t f = 0; f < facets.size(); ++f) {
    uint64_t theirs = 0;
    for (int c = 0; c < kChunks; ++c) {
      theirs |= static_cast<uint64_t>(zero[f * kChunks + c]) << (c * kChunkBits);
    }
    differ[f] = theirs == mine[f] ? 0.0 : 1.0;
  }
  comm.sum(differ.data(), differ.size());
  std::string which;
  double most = 0;
  for (size_t f = 0; f < facets.size(); ++f) {
    if (differ[f] == 0) continue;
    which += (which.empty() ? "" : ", ") + facets[f].first;
    most = std::max(most, differ[f]);
  }
  user_assert(which.empty()) << "the ranks of this distributed solve were given different inputs: " << which
                             << " differ from rank 0's on " << static_cast<int>(most) << " of " << comm.size()
                             << " ranks; every rank must solve the same problem with the same data and options";
}

}  // namespace proxc::internal
