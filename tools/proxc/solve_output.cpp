#include "solve_output.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

namespace proxc_cli {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// "NAME=FILE" → (NAME, FILE) when NAME is an identifier and FILE names an
// array file; ("", value) otherwise (a file whose name holds '=': "./a=1.npy").
std::pair<std::string, std::string> split_named(const std::string& value) {
  const size_t eq = value.find('=');
  if (eq == std::string::npos || !is_identifier(value.substr(0, eq)) ||
      !proxc::has_array_extension(value.substr(eq + 1))) {
    return {"", value};
  }
  return {value.substr(0, eq), value.substr(eq + 1)};
}

// Where a container path's member starts (after "x.npz:" or "x.h5:"), or npos.
size_t member_start(const std::string& path) {
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t best = std::string::npos;
  for (const std::string ext : {".npz:", ".h5:", ".hdf5:"}) {
    const size_t at = lower.find(ext);
    if (at != std::string::npos) best = std::min(best, at + ext.size());
  }
  return best;
}

// `path` with `suffix` after its stem ("out.npy" → "out_x.npy") or, for a
// container's member, after the member ("r.h5:/recon" → "r.h5:/recon_x").
std::string with_suffix(const std::string& path, const std::string& suffix) {
  if (member_start(path) != std::string::npos) return path + suffix;
  const std::filesystem::path o(path);
  return (o.parent_path() / (o.stem().string() + suffix + o.extension().string())).string();
}

// The file a path names (a container's member path: the container) as a key
// equal for two paths of one file: its device and inode where it exists, the
// absolute path of the file it would create otherwise (through a dangling
// link, the link's target); and the member ("" for a plain file).
std::pair<std::string, std::string> file_key(const std::string& path) {
  const size_t m = member_start(path);
  const std::string file = m == std::string::npos ? path : path.substr(0, m - 1);
  std::string member = m == std::string::npos ? "" : path.substr(m);
  if (!member.empty() && member[0] == '/') member.erase(0, 1);  // HDF5's "/b" and "b" name one dataset
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0) {
    return {"inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino), member};
  }
  std::string target = file;
  try {
    target = proxc::output_target(file);
  } catch (const proxc::UserError&) {
    // A loop of links: the write's own check says so.
  }
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::weakly_canonical(target, ec);
  return {"path " + (ec ? target : abs.string()), member};
}

// Whether `path` is a snapshot name of `result` (snapshot_path(result, k,
// max_iters) for 0 < k <= max_iters: with --fuse F the snapshot is named after
// the run that reaches a multiple of --save-every, F iterations at a time).
bool is_snapshot_of(const std::string& path, const std::string& result, int max_iters) {
  const std::string zero = snapshot_path(result, 0, max_iters);
  const size_t at = zero.rfind("_iter");
  if (at == std::string::npos || path.size() != zero.size()) return false;
  const size_t from = at + 5, width = std::max(4, static_cast<int>(std::to_string(max_iters).size()));
  if (path.compare(0, from, zero, 0, from) != 0 ||
      path.compare(from + width, std::string::npos, zero, from + width, std::string::npos) != 0) {
    return false;
  }
  long k = 0;
  for (size_t i = from; i < from + width; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(path[i]))) return false;
    k = 10 * k + (path[i] - '0');
  }
  return k > 0 && k <= max_iters;
}

// An absolute, normal form of a plain file's path: its folder resolved, its
// name as written (a snapshot is named after the link, not what it names);
// a container's member path as it is.
std::string normal_path(const std::string& path) {
  if (member_start(path) != std::string::npos) return path;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) return path;
  const std::filesystem::path folder = std::filesystem::weakly_canonical(abs.parent_path(), ec);
  return ec ? abs.string() : (folder / abs.filename()).string();
}

}  // namespace

void check_distinct_files(const std::vector<FileUse>& uses, const std::vector<std::string>& snapshots,
                          int every, int max_iters) {
  std::map<std::string, std::vector<std::pair<const FileUse*, std::string>>> by_file;
  for (const FileUse& u : uses) {
    auto [key, member] = file_key(u.path);
    for (const auto& [other, other_member] : by_file[key]) {
      if (!u.output && !other->output) continue;                                         // two reads
      if (!member.empty() && !other_member.empty() && member != other_member) continue;  // one container
      // A run continuing its own checkpoint, or restarting from the result it replaces.
      auto pair_of = [&](const char* a, const char* b) {
        return (u.what == a && other->what == b) || (u.what == b && other->what == a);
      };
      if (pair_of("--checkpoint", "--resume") || pair_of("-o", "--x0")) continue;
      const bool both = u.output && other->output;
      throw proxc::UserError(
          other->what + " " + other->path + " and " + u.what + " " + u.path + " are one file: " +
          (both ? "one output would overwrite the other" : "the output would overwrite an input") +
          "; give them different paths");
    }
    by_file[key].emplace_back(&u, member);
  }
  // What each output names now is what it is written to: a link made or
  // changed during the run makes the write refuse instead.
  for (const FileUse& u : uses) {
    if (!u.output) continue;
    const size_t m = member_start(u.path);
    proxc::keep_output_target(m == std::string::npos ? u.path : u.path.substr(0, m - 1));
  }
  if (every <= 0) return;
  for (const std::string& r : snapshots) {
    for (const FileUse& u : uses) {
      if (u.what == "--x0") continue;  // a restart from a snapshot, read before any is written
      if (is_snapshot_of(normal_path(u.path), normal_path(r), max_iters)) {
        throw proxc::UserError(u.what + " " + u.path + " is the name of a snapshot of " + r +
                               " that --save-every " + std::to_string(every) +
                               " writes; give it another path");
      }
    }
  }
}

proxc::Array load_reference(const std::string& path, const std::vector<proxc::Expr>& vars) {
  proxc::Array ref = proxc::load_array(path);
  if (vars.size() != 1) {
    throw proxc::UserError("--reference " + path + ": it needs a problem with one variable, this one has " +
                           std::to_string(vars.size()));
  }
  if (ref.shape().size() != 2 && ref.shape().size() != 3) {  // PSNR and SSIM: images, colour or not
    throw proxc::UserError("--reference " + path + ": an image of 2 or 3 axes, got shape " +
                           proxc::shape_to_string(ref.shape()));
  }
  if (ref.shape() != vars[0].shape()) {
    throw proxc::UserError("--reference " + path + ": shape " + proxc::shape_to_string(ref.shape()) +
                           ", the variable " + proxc::shape_to_string(vars[0].shape()));
  }
  return ref;
}

// The first line where two texts differ, for round-trip failures.
std::string first_difference(const std::string& a, const std::string& b) {
  size_t line = 1, i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) {
    if (a[i] == '\n') ++line;
    ++i;
  }
  auto line_at = [](const std::string& s, size_t pos) {
    size_t start = s.rfind('\n', pos == 0 ? 0 : pos - 1);
    start = start == std::string::npos ? 0 : start + 1;
    size_t end = s.find('\n', pos);
    return s.substr(start, end == std::string::npos ? std::string::npos : end - start);
  };
  return "line " + std::to_string(line) + ":\n  first:  " + line_at(a, i) + "\n  second: " + line_at(b, i);
}

std::string join_names(const std::vector<std::string>& names) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return list;
}

std::vector<std::pair<std::string, std::string>> output_files(const proxc::Problem& p,
                                                              const std::vector<std::string>& outputs) {
  std::map<std::string, proxc::Expr> vars;
  for (const proxc::Expr& v : p.variables()) vars.emplace(p.name_of(v), v);
  std::vector<std::string> var_names;
  for (const auto& [name, v] : vars) var_names.push_back(name);
  std::vector<std::pair<std::string, std::string>> files;
  if (outputs.empty()) return files;
  const bool named = !split_named(outputs[0]).first.empty();
  if (!named) {
    if (outputs.size() > 1) {
      throw proxc::UserError("-o given " + std::to_string(outputs.size()) +
                             " times: name each variable's file, as -o NAME=FILE (the variables: " +
                             join_names(var_names) + ")");
    }
    if (vars.size() == 1) return {{var_names[0], outputs[0]}};
    for (const std::string& name : var_names) files.emplace_back(name, with_suffix(outputs[0], "_" + name));
    return files;
  }
  std::set<std::string> seen, seen_files;
  for (const std::string& o : outputs) {
    const auto [name, file] = split_named(o);
    if (name.empty() || !vars.count(name)) {
      throw proxc::UserError("-o " + o + ": " +
                             (name.empty() ? std::string("give every output as NAME=FILE once one is")
                                           : "the problem has no variable '" + name + "'") +
                             " (the variables: " + join_names(var_names) + ")");
    }
    if (!seen.insert(name).second) throw proxc::UserError("-o names the variable '" + name + "' twice");
    if (!seen_files.insert(file).second) throw proxc::UserError("-o names the file " + file + " twice");
    files.emplace_back(name, file);
  }
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

bool is_dump_name(const std::string& path, const std::string& dump_dir) {
  namespace fs = std::filesystem;
  auto folder = [](const fs::path& p, std::error_code& ec) {
    const fs::path n = fs::weakly_canonical(fs::absolute(p, ec), ec).lexically_normal();
    return n.has_filename() ? n : n.parent_path();
  };
  std::error_code ec_dump, ec_file;
  const fs::path dump = folder(dump_dir, ec_dump);
  const fs::path parent = folder(fs::absolute(path, ec_file).parent_path(), ec_file);
  const std::string name = fs::path(path).filename().string(), ext = fs::path(path).extension().string();
  const bool numbered = name.size() > 3 && std::isdigit(static_cast<unsigned char>(name[0])) &&
                        std::isdigit(static_cast<unsigned char>(name[1])) && name[2] == '_';
  return !ec_dump && !ec_file && dump == parent && numbered && (ext == ".prox" || ext == ".json");
}

}  // namespace

void check_output_apart(const proxc::Problem& p, const std::string& file, const std::string& output,
                        const std::string& dump_dir) {
  if (output.empty()) return;
  std::vector<FileUse> uses{{"the problem", file, false}};
  for (const std::string& d : p.data_files()) uses.push_back({"the data", d, false});
  uses.push_back({"-o", output, true});
  check_distinct_files(uses);
  // The passes write NN_pass.prox and .json into the dump folder: no -o of those names there.
  if (!dump_dir.empty() && is_dump_name(output, dump_dir)) {
    throw proxc::UserError(
        "-o " + output + " is in the --dump-ir folder " + dump_dir +
        " under a name the passes' dumps take (NN_pass.prox, NN_pass.json); give it another "
        "name or the dumps another folder");
  }
}

void check_images_apart(const std::vector<std::string>& images, const std::string& output) {
  std::vector<FileUse> uses;
  for (const std::string& f : images) uses.push_back({"the image", f, false});
  uses.push_back({"-o", output, true});
  check_distinct_files(uses);
}

void check_solve_files(const proxc::Problem& p, const SolveFiles& f) {
  std::vector<FileUse> uses{{"the problem", f.problem, false}};
  for (const std::string& d : p.data_files()) uses.push_back({"the data", d, false});
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--x0", f.x0},
                                   {"--reference", f.reference},
                                   {"--resume", f.resume}}) {
    if (!path.empty()) uses.push_back({flag, path, false});
  }
  std::vector<std::string> results;
  for (const auto& [name, r] : f.results) {
    uses.push_back({"-o", r, true});
    results.push_back(r);
  }
  if (!f.log.empty()) uses.push_back({"--log", f.log, true});
  if (!f.checkpoint.empty()) uses.push_back({"--checkpoint", f.checkpoint, true});
  for (const std::string& r : f.report) uses.push_back({"--report's", r, true});
  check_distinct_files(uses, results, f.save_every, f.max_iters);
}

std::string as_flag(const std::string& message, const std::string& api, const std::string& flag) {
  return message.compare(0, api.size(), api) == 0 ? flag + message.substr(api.size()) : message;
}

std::string snapshot_path(const std::string& path, int iteration, int max_iters) {
  const int width = std::max(4, static_cast<int>(std::to_string(max_iters).size()));
  char buf[32];
  std::snprintf(buf, sizeof buf, "_iter%0*d", width, iteration);
  return with_suffix(path, buf);
}

std::string log_csv(const proxc::SolverSummary& s, const std::vector<std::pair<double, double>>& quality) {
  std::string csv =
      std::string("iteration,r,s,eps_pri,eps_dual,objective,seconds") + (quality.empty() ? "\n" : ",psnr,ssim\n");
  for (size_t k = 0; k < s.history.size(); ++k) {
    const proxc::IterationInfo& h = s.history[k];
    char buf[320];
    std::snprintf(buf, sizeof buf, "%d,%.9g,%.9g,%.9g,%.9g,%.12g,%.6f", h.iteration, h.r, h.s, h.eps_pri, h.eps_dual,
                  h.objective, h.seconds);
    csv += buf;
    if (k < quality.size()) {
      std::snprintf(buf, sizeof buf, ",%.6f,%.6f", quality[k].first, quality[k].second);
      csv += buf;
    }
    csv += "\n";
  }
  return csv;
}

}  // namespace proxc_cli
