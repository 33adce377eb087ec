#include "batch.h"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

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

void print_row(const Row& r, size_t index, size_t count) {
  std::printf("[%zu/%zu] %s: ", index + 1, count, r.input.c_str());
  if (!r.error.empty()) {
    std::printf("failed: %s\n", r.error.c_str());
  } else {
    std::printf("%s after %d iterations, objective %.6g, %.3f s%s -> %s\n", proxc::to_string(r.summary.termination),
                r.summary.iterations, r.summary.objective, r.seconds,
                r.summary.pipelines_compiled > 0 ? " (compiled)" : "", join_names(r.outputs).c_str());
  }
  std::fflush(stdout);
}

std::string rows_json(const std::vector<Row>& rows, int failed) {
  std::string j = "{\n \"frames\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    j += std::string(i ? "," : "") + "\n  {\"input\": " + json_string(r.input) + ", \"outputs\": [";
    for (size_t k = 0; k < r.outputs.size(); ++k) j += (k ? ", " : "") + json_string(r.outputs[k]);
    j += "], \"seconds\": " + std::to_string(r.seconds) + ", \"pipelines\": {\"compiled\": " +
         std::to_string(r.summary.pipelines_compiled) + ", \"loaded\": " + std::to_string(r.summary.pipelines_loaded) +
         "}";
    if (!r.error.empty()) {
      j += ", \"error\": " + json_string(r.error) + "}";
    } else {
      std::string s = r.summary.to_json();
      while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
      j += ", \"summary\": " + s + "}";
    }
  }
  return j + "\n ],\n \"failed\": " + std::to_string(failed) + "\n}\n";
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

int run_batch(proxc::Problem& p, const proxc::SolverOptions& options, const BatchJob& job,
              const std::atomic<int>* stop_signal) {
  const std::vector<std::string> frames = expand_glob(job.pattern);
  const std::vector<proxc::Expr> vars = p.variables();
  // Every frame's outputs, checked before the first solve; two frames of one
  // stem (a.png, a.npy) would write one file.
  std::vector<std::vector<std::pair<std::string, std::string>>> outputs(frames.size());
  if (!job.out_dir.empty()) {
    std::error_code ec;
    if (fs::exists(job.out_dir, ec) && !fs::is_directory(job.out_dir, ec)) {
      throw proxc::UserError("-o " + job.out_dir + ": a file is in its place; batch writes into a folder");
    }
    fs::create_directories(job.out_dir, ec);
    if (ec) throw proxc::UserError("-o " + job.out_dir + ": cannot create the folder: " + ec.message());
    std::map<std::string, std::string> taken;
    for (size_t i = 0; i < frames.size(); ++i) {
      const std::string base = (fs::path(job.out_dir) / fs::path(frames[i]).stem()).string();
      outputs[i] = output_files(p, {base + result_extension(frames[i], job.format)});
      for (const auto& [name, f] : outputs[i]) {
        proxc::check_save_path(f);
        const auto [it, fresh] = taken.emplace(f, frames[i]);
        if (!fresh) throw proxc::UserError(frames[i] + " and " + it->second + " would both be written to " + f);
      }
    }
  }
  if (!job.report.empty()) check_report_dir(job.report);
  BatchReport report(job.report, job.file, p);
  std::vector<Row> rows;
  int failed = 0, diverged = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    Row r;
    r.input = frames[i];
    const auto t0 = std::chrono::steady_clock::now();
    try {
      p.set_constant(job.name, frames[i]);
      r.summary = proxc::solve(p, options);
      std::map<std::string, proxc::Expr> by_name;
      for (const proxc::Expr& v : vars) by_name.emplace(p.name_of(v), v);
      for (const auto& [name, f] : outputs[i]) {
        proxc::save_array(f, p.value(by_name.at(name)));
        r.outputs.push_back(f);
      }
      if (r.summary.termination == proxc::Termination::Diverged) ++diverged;
      report.add(p, job.name, r.input, r.summary, r.outputs);
    } catch (const proxc::UserError& e) {
      const std::string m = e.what(), api = "set_constant";
      r.error = m.compare(0, api.size(), api) == 0 ? "--set" + m.substr(api.size()) : m;
      ++failed;
      report.add_failure(r.input, r.error);
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!job.json) print_row(r, i, frames.size());
    rows.push_back(std::move(r));
    if (stop_signal && stop_signal->load() != 0) break;  // the frame stopped at its next check: no more frames
  }
  report.finish();
  if (job.json) {
    std::cout << rows_json(rows, failed);
  } else {
    std::printf("%zu frames: %zu solved, %d failed%s\n", frames.size(), rows.size() - failed, failed,
                rows.size() < frames.size() ? " (stopped by a signal)" : "");
    if (!job.report.empty()) std::printf("report %s/index.html\n", job.report.c_str());
  }
  if (stop_signal && stop_signal->load() != 0) return 128 + stop_signal->load();
  return failed ? 2 : diverged ? 1 : 0;
}

}  // namespace proxc_cli
