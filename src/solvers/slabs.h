/// \file
/// One solve over several processes (SolverOptions::communicator): each rank
/// iterates on a slab of the rows (first axis) of every array of the split,
/// scaled problem, plus ghost rows as wide as one run of the iteration
/// program reads across a slab's edge, and exchanges the ghost rows with its
/// neighbours after every run (the ring of proxc/communicator.h).
///
/// A rank's slab holds, besides its own rows, g rows of each neighbour: the
/// previous rank's last rows ("before") and the next rank's first rows
/// ("after"), the first and last ranks' neighbours being each other (a ring).
/// They are placed so that the slab's first row is global row 0 on rank 0
/// and its last row global row H − 1 on the last rank: a boundary rule at the
/// image's edge (grad's zero last difference, a zero or replicated border)
/// holds there as on the whole image, and a circular operator that wraps
/// around the slab wraps from the owned rows into the ghost rows of the rows
/// it wraps to. Wherever else the slab's operators differ from the whole
/// image's (at the seam between the two ghost blocks, g rows away from any
/// owned row), the error travels at most g rows in one run, and the exchange
/// replaces the ghost rows before it reaches an owned row: the owned rows are
/// the single-process iterate, to float rounding.
///
/// g is derived from the iteration program: the rows each node's value may be
/// wrong by, from the operators' reach along the first axis (grad 1, conv the
/// kernel's half-width, a composition the sum, fuse F iterations F times as
/// many). The residual norms are summed over the owned rows only (a mask) and
/// then over the ranks, when a check runs.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/problem.h"
#include "proxc/communicator.h"
#include "step/backend.h"
#include "step/step.h"

namespace proxc::internal {

class Slabs {
 public:
  /// The slabs of `p` (split and scaled) for the programs that iterate on it
  /// (the iteration, and the CG x-update's where there is one; each run
  /// followed by an exchange of its output arrays) on `comm`'s ranks. Throws UserError for a problem that cannot be
  /// cut into slabs (an operator that moves rows, a prox that couples them,
  /// an FFT solve) or rows too few for the ranks, naming what and why.
  Slabs(const Problem& p, const std::vector<StepProgram>& programs, Communicator& comm);

  /// This rank's problem: p with every row-indexed array cut to the slab.
  const Problem& problem() const { return slab_; }
  int ghost_rows() const { return g_; }
  int64_t rows() const { return rows_; }
  int64_t slab_rows() const { return static_cast<int64_t>(global_row_.size()); }
  int64_t owned_rows() const { return owned_end_ - owned_begin_; }
  Communicator& comm() const { return comm_; }

  /// The program for this rank's slab problem: each reduction summed over
  /// the owned rows only (times a mask, an input named mask_name(shape)).
  StepProgram masked(const StepProgram& program) const;
  /// The mask inputs `masked` programs read.
  const std::map<std::string, Array>& masks() const { return masks_; }

  /// This rank's slab of a whole array (its first axis: the rows).
  Array slice(const Array& whole) const;
  /// The whole array on rank 0 from every rank's slab (an empty array elsewhere).
  Array gather(const Array& slab) const;
  /// The ghost rows of a slab replaced by the neighbours' owned rows.
  void exchange(Array* slab) const;
  /// A slab array's shape with all the rows.
  Shape whole(Shape slab_shape) const {
    slab_shape.at(0) = rows_;
    return slab_shape;
  }
  /// After a run: its scalars summed over the ranks, its arrays' ghost rows exchanged.
  void combine(StepOutputs* out) const;
  /// Scalars summed over the ranks, in place.
  void sum(std::map<std::string, double>* scalars) const;
  double sum(double v) const;
  /// Bytes this rank sent in exchanges, and seconds in exchanges and sums, so far.
  double bytes_sent() const { return bytes_sent_; }
  double communicate_seconds() const { return seconds_; }

 private:
  Communicator& comm_;
  int g_ = 0;
  int64_t rows_ = 0;
  std::vector<int64_t> global_row_;  // the global row of each slab row
  int64_t owned_begin_ = 0, owned_end_ = 0, before_ = 0, after_ = 0;  // slab rows
  Problem slab_;
  mutable std::map<std::string, Array> masks_;  // filled by masked()
  mutable double bytes_sent_ = 0, seconds_ = 0;
};

}  // namespace proxc::internal
