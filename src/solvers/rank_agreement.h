/// \file
/// Before a distributed solve iterates, its ranks check that they were given
/// the same problem, data and options (proxc/communicator.h requires it): a
/// rank with other data would mix its rows into the result, and one with
/// another --iters or --check-every would wait forever at a collective call
/// the others never make. Each facet's digest is compared with rank 0's
/// through the communicator's sum, on every rank alike, so that every rank
/// refuses with the same message.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "proxc/communicator.h"

namespace proxc::internal {

/// A facet of what the ranks must agree on: its name in messages ("the
/// data", "SolverOptions.max_iters") and its bytes (compared by digest).
using RankFacet = std::pair<std::string, std::string>;

/// Throws the same UserError on every rank when any rank's facets differ
/// from rank 0's, naming each that differs and on how many ranks. Every rank
/// must call it with the same facet names, in the same order.
void check_ranks_agree(Communicator& comm, const std::vector<RankFacet>& facets);

}  // namespace proxc::internal
