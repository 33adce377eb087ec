// proxc solve --report DIR: a page to look at a reconstruction with.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <proxc/proxc.h>

#include "ranks.h"

namespace proxc_cli {

/// What the page shows.
struct Report {
  std::string title;                 ///< the problem file, as given
  std::string latex;                 ///< Problem::print(ProblemFormat::Latex)
  std::string text;                  ///< Problem::print(ProblemFormat::Text)
  /// The images side by side: input (the data constant of the result's
  /// shape), result, reference; each (caption, array).
  std::vector<std::pair<std::string, proxc::Array>> images;
  proxc::SolverSummary summary;      ///< its history has the objective per check
  bool has_reference = false;        ///< psnr and ssim are set
  double psnr = 0, ssim = 0;         ///< against the reference
  std::vector<std::string> outputs;  ///< the files the result went to
};

/// Throws the UserError writing a report to `dir` would throw: a file in
/// its place, a parent folder missing or not writable.
void check_report_dir(const std::string& dir);

/// Writes DIR/index.html and the images it shows (PNG beside it), each file
/// whole or not at all; other files in DIR are left alone. The page needs no
/// network: the plot is inline SVG, the formula HTML, and a small script
/// states in the page whether every image loaded and every curve was drawn
/// (the element #render-check, which the test reads from headless Chromium).
void write_report(const std::string& dir, const Report& report);

/// The files the report of a solve of `p` writes into `dir`: index.html and
/// one PNG per picture (each image's views: a 3-D array has two), known
/// before the solve; `reference` is the --reference array's shape, or null.
/// The shared-file check's list (solve_output.h).
std::vector<std::string> solve_report_files(const std::string& dir, const proxc::Problem& p,
                                            const proxc::Shape* reference);

/// The files a batch report of `frames` frames writes into `dir`.
std::vector<std::string> batch_report_files(const std::string& dir, size_t frames);

/// The report of a solve of `p` (one variable: its data constant as the
/// input image; the reference read from `reference` when given).
void write_solve_report(const std::string& dir, const std::string& title, const proxc::Problem& p,
                        const proxc::SolverSummary& summary, const std::vector<std::string>& written,
                        const std::string& reference, double psnr, double ssim);

/// `proxc batch --report DIR`: one row per frame (its input and result side
/// by side, termination, iterations, objective, time), written as the frames
/// are solved (each row's images at once) and the page at finish(). With an
/// empty `dir` it does nothing.
class BatchReport {
 public:
  BatchReport(const std::string& dir, const std::string& title, const proxc::Problem& p);
  /// Frame `index` just solved: `constant` holds its data, the variables its result.
  void add(size_t index, const proxc::Problem& p, const std::string& constant, const std::string& input,
           const proxc::SolverSummary& s, const std::vector<std::string>& outputs);
  void add_failure(size_t index, const std::string& input, const std::string& error);
  /// Every rank's rows to rank 0, which writes the page.
  void finish(const Ranks& ranks);

 private:
  std::string dir_, title_, latex_;
  std::map<size_t, std::string> rows_;
  long milliseconds_ = 0;
};

/// The LaTeX of ProblemFormat::Latex as HTML (sub- and superscripts,
/// Greek letters and operators as characters); exposed for tests.
std::string latex_to_html(const std::string& latex);

}  // namespace proxc_cli
