// What `proxc solve` writes besides its summary: the results by variable,
// snapshots of the iterate, the --log CSV; and the text helpers the commands share.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <proxc/proxc.h>

namespace proxc_cli {

/// Where each variable's result goes, by variable name (in name order), from
/// the -o values: one FILE for a problem of one variable; for several,
/// FILE_NAME.EXT per variable (a container's member: MEMBER_NAME), or
/// NAME=FILE per variable, as the user names them (the variables not named
/// are not written; NAME an identifier, FILE with an array extension, else
/// the whole value is a file name). A UserError for a NAME that is no
/// variable, a variable or a file named twice, or plain files and NAME=FILE
/// mixed.
std::vector<std::pair<std::string, std::string>> output_files(const proxc::Problem& p,
                                                              const std::vector<std::string>& outputs);

/// The snapshot of `path` after `iteration`: "out_iter0040.npy" (the stem
/// gets the suffix; a container's member does: "r.h5:/x_iter0040"), the
/// number padded to the width of `max_iters` so that names sort.
std::string snapshot_path(const std::string& path, int iteration, int max_iters);

/// The --log CSV: iteration,r,s,eps_pri,eps_dual,objective,seconds[,psnr,ssim]
/// (the quality columns when `quality` has a pair per check).
std::string log_csv(const proxc::SolverSummary& s, const std::vector<std::pair<double, double>>& quality);

/// parse, opt and compile: a UserError when -o is the problem's file or one
/// of its data files, as check_solve_files refuses it for solve, or (opt) in
/// `dump_dir` under a name the passes' dumps take (NN_pass.prox, NN_pass.json).
void check_output_apart(const proxc::Problem& p, const std::string& file, const std::string& output,
                        const std::string& dump_dir = "");
/// montage: a UserError when -o is one of the images.
void check_images_apart(const std::vector<std::string>& images, const std::string& output);

/// The --reference image, loaded and checked before the solve: a UserError
/// naming the flag and both shapes unless the problem has one variable of
/// the reference's shape.
proxc::Array load_reference(const std::string& path, const std::vector<proxc::Expr>& vars);

/// The first line where two texts differ ("line N:" and both lines), for
/// round-trip failures.
std::string first_difference(const std::string& a, const std::string& b);

/// One file a command reads or writes (check_distinct_files).
struct FileUse {
  std::string what;  ///< as the user named it: "-o", "--log", "the problem", "the data"
  std::string path;
  bool output = false;
};

/// A UserError naming both uses when an output would write a file that
/// another output writes or an input reads (the same file by path, or by
/// inode where it exists). Two members of one container ("r.h5:/a" and
/// "r.h5:/b") are apart, --checkpoint may be --resume's file (a run
/// continuing its own checkpoint) and -o --x0's (a restart from the result
/// it replaces; --x0 is read whole before the solve). `snapshots`: the results whose snapshots
/// --save-every `every` writes up to `max_iters` (out_iter0040.npy, ...); a
/// use of one of their names is refused too.
void check_distinct_files(const std::vector<FileUse>& uses, const std::vector<std::string>& snapshots = {},
                          int every = 0, int max_iters = 0);

/// What a solve reads and writes besides the problem's data (check_solve_files).
struct SolveFiles {
  std::string problem, x0, reference, resume, log, checkpoint;  ///< "" for none
  std::vector<std::pair<std::string, std::string>> results;     ///< output_files
  int save_every = 0, max_iters = 0;
  std::vector<std::string> report;  ///< --report's files (solve_report_files), none without it
};

/// check_distinct_files over a solve's files: the problem, its data, --x0,
/// --reference and --resume read; the results, their snapshots, --log,
/// --checkpoint and --report's files written.
void check_solve_files(const proxc::Problem& p, const SolveFiles& f);

/// An API error as the user wrote the option: `message` starting with the
/// API function's name `api` starts with `flag` instead ("set_constant b:
/// ..." becomes "--set b: ..."); any other message is returned as it is.
std::string as_flag(const std::string& message, const std::string& api, const std::string& flag);

/// "a", "a and b", "a, b and c".
std::string join_names(const std::vector<std::string>& names);

}  // namespace proxc_cli
