/// \file
/// The processes a distributed solve runs on (SolverOptions::communicator).
/// proxc's library does not link MPI: its CLI implements this interface with
/// MPI (tools/proxc/ranks.cpp) for `mpirun -np N proxc solve --distributed`;
/// another program may implement it with its own MPI communicator, threads or
/// anything that moves floats between peers.
///
/// Every rank calls solve() with the same problem, data and options; each
/// iterates on a slab of the variables' rows (their first axis) and the
/// solve's result (the variables, the summary's objective) is rank 0's.
/// Every call below is collective: every rank makes it, in the same order.
#pragma once

#include <cstddef>
#include <vector>

namespace proxc {

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's index, 0 ... size() − 1, and how many there are.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The ring exchange of ghost rows: sends `to_prev` (n floats) to rank
  /// (rank − 1) mod size and `to_next` to (rank + 1) mod size; receives into
  /// `from_next` what (rank + 1) mod size sent as its `to_prev`, and into
  /// `from_prev` what (rank − 1) mod size sent as its `to_next`. With two
  /// ranks both messages go to the one other rank.
  virtual void exchange_ring(const float* to_prev, const float* to_next, float* from_prev, float* from_next,
                             size_t n) = 0;
  /// values[i] summed over the ranks, in place, on every rank (rank order,
  /// so that every rank gets the same bits).
  virtual void sum(double* values, size_t n) = 0;
  /// Each rank's `mine` (n floats, n may differ between ranks) concatenated
  /// in rank order into *all on rank 0; *all is left alone elsewhere.
  virtual void gather(const float* mine, size_t n, std::vector<float>* all) = 0;
};

}  // namespace proxc
