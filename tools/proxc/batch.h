// proxc batch: one problem, compiled once, solved for every file a pattern
// matches.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include <proxc/proxc.h>

#include "ranks.h"

namespace proxc_cli {

struct BatchJob {
  std::string file;             ///< the problem, as given
  std::string name, pattern;    ///< --set NAME=GLOB: the constant each frame replaces
  std::string out_dir;          ///< -o DIR ("" writes nothing)
  std::string format;           ///< --format: the results' extension (".npy"); "" keeps the input's
  std::string report;           ///< --report DIR ("" for none)
  bool json = false;            ///< one JSON object instead of the table
};

/// The files `pattern` matches (glob(3): *, ?, [...]), sorted; a UserError
/// when none does.
std::vector<std::string> expand_glob(const std::string& pattern);

/// True when `value` holds a glob character (*, ? or [).
bool is_glob(const std::string& value);

/// Solves `p` (its other constants set) once per frame with `options`: the
/// frame's data replaces the constant job.name (no recompilation: the
/// pipelines of the first frame serve every other), the result goes to
/// DIR/<the frame's stem>.<ext> (DIR/<stem>_<variable>.<ext> for several
/// variables), and a row per frame is printed (or one JSON object). A frame
/// that fails (a wrong shape, an unreadable file) is reported in its row and
/// the others go on. Under MPI (`ranks`), frame i is solved by rank i mod N
/// and rank 0 prints every row in frame order at the end (and the report's
/// page); each rank writes its own frames' results. Returns the exit code: 0, 1 when a frame diverged, 2
/// when one failed, 128 + the signal when `stop_signal` says one came.
int run_batch(proxc::Problem& p, const proxc::SolverOptions& options, const BatchJob& job, const Ranks& ranks,
              const std::atomic<int>* stop_signal);

}  // namespace proxc_cli
