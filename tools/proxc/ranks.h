// The MPI ranks a command runs on: one process without MPI (not built with
// it, or not started by mpirun/srun), N under `mpirun -np N`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "proxc/communicator.h"

namespace proxc_cli {

struct Ranks {
  int rank = 0;
  int size = 1;
  bool mpi = false;  ///< MPI_Init ran (started by a launcher, built with MPI)
};

/// Initialises MPI when the process was started by an MPI launcher (Open
/// MPI's mpirun, or a PMI/PMIx one such as srun) and proxc was built with
/// MPI; otherwise one rank of one.
Ranks init_ranks(int* argc, char*** argv);

/// MPI_Finalize when init_ranks initialised MPI; MPI_Abort instead when
/// `abort_code` is not 0 (an error left this rank while the others may wait
/// in a collective: the launcher then ends every rank, never a hang).
void finalize_ranks(const Ranks& r, int abort_code);

/// Every rank's `mine`, in rank order, on rank 0 (empty elsewhere); just
/// {mine} on one rank.
std::vector<std::string> gather_to_root(const Ranks& r, const std::string& mine);

/// The sum over the ranks of `v`, on every rank.
long sum_over_ranks(const Ranks& r, long v);

/// The ranks as the library's Communicator (solve --distributed): MPI's
/// COMM_WORLD, or one rank alone when not started by a launcher.
std::shared_ptr<proxc::Communicator> communicator(const Ranks& r);

}  // namespace proxc_cli
