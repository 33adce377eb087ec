#include "batch.h"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "ranks.h"
#include "report.h"
#include "solve_output.h"

namespace proxc_cli {

namespace {

namespace fs = std::filesystem;

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The extension results get: --format's, else the frame's when proxc writes
// it (.npy, .png, .tif), else .npy.
std::string result_extension(const std::string& frame, const std::string& format) {
  if (!format.empty()) return format[0] == '.' ? format : "." + format;
  std::string ext = fs::path(frame).extension().string();
  std::string lower = ext;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* writable : {".npy", ".png", ".tif", ".tiff"}) {
    if (lower == writable) return ext;
  }
  return ".npy";
}

struct Row {
  std::string input;
  std::vector<std::string> outputs;
  proxc::SolverSummary summary;
  double seconds = 0;  // the frame's whole solve
  std::string error;
};

std::string row_text(const Row& r, size_t index, size_t count) {
  char head[64];
  std::snprintf(head, sizeof head, "[%zu/%zu] ", index + 1, count);
  if (!r.error.empty()) return head + r.input + ": failed: " + r.error + "\n";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s after %d iterations, objective %.6g, %.3f s%s",
                proxc::to_string(r.summary.termination), r.summary.iterations, r.summary.objective, r.seconds,
                r.summary.pipelines_compiled > 0 ? " (compiled)" : "");
  // Without -o nothing is written, and the row says so.
  std::string row = head + r.input + ": " + buf +
                    (r.outputs.empty() ? " (not written: no -o)" : " -> " + join_names(r.outputs)) + "\n";
  for (const std::string& w : r.summary.warnings) row += head + r.input + ": warning: " + w + "\n";
  return row;
}

std::string row_json(const Row& r) {
  std::string j = "{\"input\": " + json_string(r.input) + ", \"outputs\": [";
  for (size_t k = 0; k < r.outputs.size(); ++k) j += (k ? ", " : "") + json_string(r.outputs[k]);
  j += "], \"seconds\": " + std::to_string(r.seconds) + ", \"pipelines\": {\"compiled\": " +
       std::to_string(r.summary.pipelines_compiled) + ", \"loaded\": " + std::to_string(r.summary.pipelines_loaded) +
       "}";
  if (!r.error.empty()) return j + ", \"error\": " + json_string(r.error) + "}";
  std::string s = r.summary.to_json();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return j + ", \"summary\": " + s + "}";
}

// Rows travel between ranks as "index \x1f text \x1f json \x1e".
constexpr char kField = '\x1f', kRecord = '\x1e';

std::map<size_t, std::pair<std::string, std::string>> merge_rows(const std::vector<std::string>& parts) {
  std::map<size_t, std::pair<std::string, std::string>> rows;
  for (const std::string& part : parts) {
    for (size_t start = 0; start < part.size();) {
      const size_t end = part.find(kRecord, start), f1 = part.find(kField, start), f2 = part.find(kField, f1 + 1);
      rows[std::stoul(part.substr(start, f1 - start))] = {part.substr(f1 + 1, f2 - f1 - 1),
                                                          part.substr(f2 + 1, end - f2 - 1)};
      start = end + 1;
    }
  }
  return rows;
}

}  // namespace

bool is_glob(const std::string& value) { return value.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> expand_glob(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> files;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      std::error_code ec;
      if (fs::is_regular_file(g.gl_pathv[i], ec)) files.emplace_back(g.gl_pathv[i]);
    }
  }
  ::globfree(&g);
  if (files.empty()) throw proxc::UserError("--set " + pattern + ": no file matches the pattern");
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

// Every frame's outputs, checked before the first solve (the folder made);
// two frames of one stem (a.png, a.npy) would write one file.
std::vector<std::vector<std::pair<std::string, std::string>>> plan_outputs(const proxc::Problem& p,
                                                                           const std::vector<std::string>& frames,
                                                                           const BatchJob& job) {
  std::vector<std::vector<std::pair<std::string, std::string>>> outputs(frames.size());
  if (job.out_dir.empty()) return outputs;
  std::error_code ec;
  if (fs::exists(job.out_dir, ec) && !fs::is_directory(job.out_dir, ec)) {
    throw proxc::UserError("-o " + job.out_dir + ": a file is in its place; batch writes into a folder");
  }
  fs::create_directories(job.out_dir, ec);
  if (ec && !fs::is_directory(job.out_dir)) {
    throw proxc::UserError("-o " + job.out_dir + ": cannot create the folder: " + ec.message());
  }
  std::map<std::string, std::string> taken;
  // No result may overwrite a frame or the problem's files (-o into the frames' folder).
  std::vector<FileUse> uses{{"the problem", job.file, false}};
  for (const std::string& d : p.data_files()) uses.push_back({"the data", d, false});
  for (const std::string& f : frames) uses.push_back({"the frame", f, false});
  for (size_t i = 0; i < frames.size(); ++i) {
    const std::string base = (fs::path(job.out_dir) / fs::path(frames[i]).stem()).string();
    outputs[i] = output_files(p, {base + result_extension(frames[i], job.format)});
    for (const auto& [name, f] : outputs[i]) {
      proxc::check_save_path(f);
      const auto [it, fresh] = taken.emplace(f, frames[i]);
      if (!fresh) throw proxc::UserError(frames[i] + " and " + it->second + " would both be written to " + f);
      uses.push_back({"the result of " + frames[i] + ",", f, true});
    }
  }
  if (!job.report.empty()) {
    for (const std::string& f : batch_report_files(job.report, frames.size()))
      uses.push_back({"--report's", f, true});
  }
  check_distinct_files(uses);
  return outputs;
}

// One frame: its data in, a solve, its results out; a UserError becomes the row's error.
Row solve_frame(proxc::Problem& p, const proxc::SolverOptions& options, const BatchJob& job, size_t i,
                const std::string& frame, const std::vector<std::pair<std::string, std::string>>& outputs,
                BatchReport* report) {
  Row r;
  r.input = frame;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    p.set_constant(job.name, frame);
    r.summary = proxc::solve(p, options);
    std::map<std::string, proxc::Expr> by_name;
    for (const proxc::Expr& v : p.variables()) by_name.emplace(p.name_of(v), v);
    for (const auto& [name, f] : outputs) {
      proxc::save_array(f, p.value(by_name.at(name)));
      r.outputs.push_back(f);
    }
    report->add(i, p, job.name, r.input, r.summary, r.outputs);
  } catch (const proxc::UserError& e) {
    r.error = as_flag(e.what(), "set_constant", "--set");
    report->add_failure(i, r.input, r.error);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

struct Counts {
  long solved = 0, failed = 0, diverged = 0, stopped = 0;
};

// Rank 0's output: the rows in frame order (unless printed live), then the totals, or the JSON object.
void print_all(const std::vector<std::string>& parts, const BatchJob& job, const Ranks& ranks, size_t frames,
               const Counts& c, bool live) {
  const auto rows = merge_rows(parts);
  if (job.json) {
    std::string j = "{\n \"frames\": [";
    bool first = true;
    for (const auto& [i, row] : rows) {
      j += std::string(first ? "" : ",") + "\n  " + row.second;
      first = false;
    }
    std::cout << j << "\n ],\n \"ranks\": " << ranks.size << ",\n \"failed\": " << c.failed << "\n}\n";
    return;
  }
  if (!live) {
    for (const auto& [i, row] : rows) std::fputs(row.first.c_str(), stdout);
  }
  std::printf("%zu frames: %ld solved, %ld failed%s%s\n", frames, c.solved, c.failed,
              ranks.size > 1 ? (" on " + std::to_string(ranks.size) + " ranks").c_str() : "",
              c.stopped ? " (stopped by a signal)" : "");
  if (!job.report.empty()) std::printf("report %s/index.html\n", job.report.c_str());
}

}  // namespace

int run_batch(proxc::Problem& p, const proxc::SolverOptions& options, const BatchJob& job, const Ranks& ranks,
              const std::atomic<int>* stop_signal) {
  const std::vector<std::string> frames = expand_glob(job.pattern);
  try {
    p.constant(job.name);  // a name that is not a constant fails every frame alike: said once, before any
  } catch (const proxc::UserError& e) {
    throw proxc::UserError(as_flag(e.what(), "constant", "--set"));
  }
  const auto outputs = plan_outputs(p, frames, job);
  if (!job.report.empty()) check_report_dir(job.report);
  BatchReport report(job.report, job.file, p);
  // Frame i is rank i mod N's; one rank prints as it goes, several print
  // on rank 0 at the end, in frame order.
  const bool live = ranks.size == 1 && !job.json;
  std::string mine;
  Counts c;
  for (size_t i = static_cast<size_t>(ranks.rank); i < frames.size() && !c.stopped;
       i += static_cast<size_t>(ranks.size)) {
    const Row r = solve_frame(p, options, job, i, frames[i], outputs[i], &report);
    (r.error.empty() ? c.solved : c.failed) += 1;
    if (r.error.empty() && r.summary.termination == proxc::Termination::Diverged) ++c.diverged;
    const std::string text = row_text(r, i, frames.size());
    if (live) {
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
    }
    mine += std::to_string(i) + kField + text + kField + row_json(r) + kRecord;
    // A signal stops the frame at its next check, and no frame starts after it.
    c.stopped = stop_signal && stop_signal->load() != 0;
  }
  const std::vector<std::string> parts = gather_to_root(ranks, mine);
  report.finish(ranks);
  for (long* v : {&c.solved, &c.failed, &c.diverged, &c.stopped}) *v = sum_over_ranks(ranks, *v);
  if (ranks.rank == 0) print_all(parts, job, ranks, frames.size(), c, live);
  if (stop_signal && stop_signal->load() != 0) return 128 + stop_signal->load();
  return c.failed ? 2 : c.diverged ? 1 : 0;
}

}  // namespace proxc_cli
