#include "ranks.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

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

namespace {

// One process: the ring's neighbours are itself.
class OneRank : public proxc::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void exchange_ring(const float* to_prev, const float* to_next, float* from_prev, float* from_next,
                     size_t n) override {
    std::copy(to_prev, to_prev + n, from_next);
    std::copy(to_next, to_next + n, from_prev);
  }
  void sum(double*, size_t) override {}
  void gather(const float* mine, size_t n, std::vector<float>* all) override { all->assign(mine, mine + n); }
};

#ifdef PROXC_HAVE_MPI
// MPI's COMM_WORLD. Messages go in pieces of at most 2^30 floats (MPI counts are ints).
class MpiRanks : public proxc::Communicator {
 public:
  explicit MpiRanks(const Ranks& r) : rank_(r.rank), size_(r.size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void exchange_ring(const float* to_prev, const float* to_next, float* from_prev, float* from_next,
                     size_t n) override {
    const int prev = (rank_ + size_ - 1) % size_, next = (rank_ + 1) % size_;
    for (size_t at = 0; at < n; at += kPiece) {
      const int k = piece(n - at);
      MPI_Sendrecv(to_prev + at, k, MPI_FLOAT, prev, 1, from_next + at, k, MPI_FLOAT, next, 1, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      MPI_Sendrecv(to_next + at, k, MPI_FLOAT, next, 2, from_prev + at, k, MPI_FLOAT, prev, 2, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
    }
  }

  // Every rank's values, then the sums in rank order: the same bits on every rank.
  void sum(double* values, size_t n) override {
    std::vector<double> all(n * static_cast<size_t>(size_));
    MPI_Allgather(values, piece(n), MPI_DOUBLE, all.data(), piece(n), MPI_DOUBLE, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; ++i) {
      double s = 0;
      for (int r = 0; r < size_; ++r) s += all[static_cast<size_t>(r) * n + i];
      values[i] = s;
    }
  }

  void gather(const float* mine, size_t n, std::vector<float>* all) override {
    uint64_t count = n;
    std::vector<uint64_t> counts(static_cast<size_t>(size_));
    MPI_Gather(&count, 1, MPI_UINT64_T, counts.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank_ != 0) {
      for (size_t at = 0; at < n; at += kPiece) MPI_Send(mine + at, piece(n - at), MPI_FLOAT, 0, 3, MPI_COMM_WORLD);
      return;
    }
    size_t total = 0;
    for (uint64_t c : counts) total += c;
    all->resize(total);
    std::copy(mine, mine + n, all->begin());
    size_t offset = n;
    for (int r = 1; r < size_; ++r) {
      const size_t c = counts[static_cast<size_t>(r)];
      for (size_t at = 0; at < c; at += kPiece) {
        MPI_Recv(all->data() + offset + at, piece(c - at), MPI_FLOAT, r, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
      offset += c;
    }
  }

 private:
  static constexpr size_t kPiece = size_t{1} << 30;
  static int piece(size_t left) { return static_cast<int>(std::min(left, kPiece)); }
  int rank_, size_;
};
#endif

}  // namespace

std::shared_ptr<proxc::Communicator> communicator(const Ranks& r) {
#ifdef PROXC_HAVE_MPI
  if (r.mpi) return std::make_shared<MpiRanks>(r);
#else
  (void)r;
#endif
  return std::make_shared<OneRank>();
}

}  // namespace proxc_cli
