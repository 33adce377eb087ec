/// \file
/// Checkpoints of a solve: the whole solver state, written whole or not at
/// all, and read back only by the same problem and solver (a signature of
/// the split, scaled problem and the options that shape the iterates).
///
/// The format: "PROXCKPT2\n", an 8-byte little-endian header length, a JSON
/// header (solver, iteration, problem signature, arrays: name and shape, the
/// adaptive step sizes as "scalars" when there are any, and
/// an XXH3-128 checksum of all of these and the data), then the arrays'
/// float32 values in header order. A resume checks everything: the checksum,
/// the solver and signature, names and shapes, the iteration (0..max_iters)
/// and that every value is finite.
#pragma once

#include <map>
#include <string>

#include "support/array.h"

namespace proxc::internal {

/// `scalars`: values kept exactly (doubles in the header, in the checksum):
/// the adaptive step sizes.
void save_checkpoint(const std::string& path, const std::string& solver, const std::string& signature,
                     int iteration, const std::map<std::string, Array>& state,
                     const std::map<std::string, double>& scalars = {});

/// Reads the state saved at `path` into *state (whose arrays give the names
/// and shapes expected) and *scalars (likewise; none expected when null) and
/// returns the iteration it was saved at; a UserError naming the path for
/// anything else.
int load_checkpoint(const std::string& path, const std::string& solver, const std::string& signature,
                    int max_iters, std::map<std::string, Array>* state,
                    std::map<std::string, double>* scalars = nullptr);

}  // namespace proxc::internal
