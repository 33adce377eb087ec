/// \file
/// The line a long preparation of a solve shows on a terminal: the passes
/// and the pipelines' compile can take minutes for a problem of many terms
/// (Halide's compile grows with the square of the terms), and a silent
/// terminal looks like a hang.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

namespace proxc_cli {

/// Started before a solve: when `shown` (standard error is a terminal) and
/// the iterations have not begun after two seconds, rewrites one line on
/// standard error every second, "  preparing the solve (the passes, then
/// compiling N pipelines): 12 s", until stop() (the solve's `started`
/// callback, or the end of the solve), which clears the line.
class PreparingLine {
 public:
  explicit PreparingLine(bool shown);
  ~PreparingLine();
  PreparingLine(const PreparingLine&) = delete;
  PreparingLine& operator=(const PreparingLine&) = delete;
  /// Ends the line (idempotent; safe from the solver's thread).
  void stop();

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopped_ = false;
  bool printed_ = false;
  std::thread thread_;
};

}  // namespace proxc_cli
