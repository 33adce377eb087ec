#include "ranks.h"

#include <cstdlib>

#ifdef PROXC_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C interface only
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace proxc_cli {

namespace {

bool started_by_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(v)) return true;
  }
  return false;
}

}  // namespace

Ranks init_ranks(int* argc, char*** argv) {
  Ranks r;
#ifdef PROXC_HAVE_MPI
  if (!started_by_launcher()) return r;
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.size);
  r.mpi = true;
#else
  (void)argc;
  (void)argv;
#endif
  return r;
}

void finalize_ranks(const Ranks& r, int abort_code) {
#ifdef PROXC_HAVE_MPI
  if (!r.mpi) return;
  if (abort_code != 0 && r.size > 1) MPI_Abort(MPI_COMM_WORLD, abort_code);
  MPI_Finalize();
#else
  (void)r;
  (void)abort_code;
#endif
}

std::vector<std::string> gather_to_root(const Ranks& r, const std::string& mine) {
  if (!r.mpi || r.size == 1) return {mine};
#ifdef PROXC_HAVE_MPI
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(r.rank == 0 ? r.size : 0), offsets(r.rank == 0 ? r.size : 0);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (r.rank == 0) {
    long total = 0;
    for (int k = 0; k < r.size; ++k) {
      offsets[k] = static_cast<int>(total);
      total += lens[k];
    }
    all.resize(static_cast<size_t>(total));
  }
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int k = 0; r.rank == 0 && k < r.size; ++k) out.push_back(all.substr(offsets[k], lens[k]));
  return out;
#else
  return {mine};
#endif
}

long sum_over_ranks(const Ranks& r, long v) {
#ifdef PROXC_HAVE_MPI
  if (r.mpi && r.size > 1) {
    long sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return sum;
  }
#else
  (void)r;
#endif
  return v;
}

}  // namespace proxc_cli
