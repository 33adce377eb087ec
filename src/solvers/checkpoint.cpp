// Checkpoints of a solve (checkpoint.h).
#include "solvers/checkpoint.h"

#include <cmath>
#include <cstring>
#include <set>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal {

namespace {

constexpr const char* kMagic = "PROXCKPT2\n";  // 10 bytes
constexpr size_t kMagicBytes = 10;

// The checksum of everything a resume depends on: the header's fields and the
// arrays' bytes, in header order.
std::string checksum(const std::string& solver, int64_t iteration, const std::string& signature,
                     const std::string& arrays_json, const std::string& data) {
  return content_hash(solver + "|" + std::to_string(iteration) + "|" + signature + "|" + arrays_json + "|" +
                      data);
}

}  // namespace

void save_checkpoint(const std::string& path, const std::string& solver, const std::string& signature,
                     int iteration, const std::map<std::string, Array>& state,
                     const std::map<std::string, double>& scalars) {
  nlohmann::ordered_json arrays = nlohmann::ordered_json::array();
  std::string data;
  for (const auto& [name, a] : state) {
    arrays.push_back({{"name", name}, {"shape", a.shape}});
    data.append(reinterpret_cast<const char*>(a.data.data()), a.data.size() * sizeof(float));
  }
  nlohmann::ordered_json h;
  h["solver"] = solver;
  h["iteration"] = iteration;
  h["signature"] = signature;
  h["arrays"] = arrays;
  std::string listed = arrays.dump();
  if (!scalars.empty()) {
    h["scalars"] = scalars;
    listed += "|" + h["scalars"].dump();
  }
  h["checksum"] = checksum(solver, iteration, signature, listed, data);
  std::string header = h.dump();
  std::string out = kMagic;
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  out += data;
  write_file_atomic(path, out);
}

int load_checkpoint(const std::string& path, const std::string& solver, const std::string& signature,
                    int max_iters, std::map<std::string, Array>* state,
                    std::map<std::string, double>* scalars) {
  std::string bytes = read_file(path);
  user_assert(bytes.compare(0, 9, "PROXCKPT1") != 0)
      << path
      << ": a checkpoint of an older proxc, without a checksum, which cannot be verified; start the "
         "solve again";
  user_assert(bytes.size() >= kMagicBytes + 8 && bytes.compare(0, kMagicBytes, kMagic) == 0)
      << path << ": not a proxc checkpoint";
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i) {
    len |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[kMagicBytes + i])) << (8 * i);
  }
  user_assert(len <= bytes.size() - kMagicBytes - 8) << path << ": truncated checkpoint header";
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(bytes.substr(kMagicBytes + 8, len));
  } catch (const nlohmann::json::parse_error& e) {
    // Where, not the parser's text: it quotes the damaged bytes.
    user_error << path << ": corrupt checkpoint header (not JSON at its byte " << e.byte << ")";
  } catch (const nlohmann::json::exception&) {
    user_error << path << ": corrupt checkpoint header";
  }
  auto is = [&](const char* key, bool (nlohmann::json::*test)() const) {
    return h.is_object() && h.contains(key) && (h[key].*test)();
  };
  user_assert(is("solver", &nlohmann::json::is_string) && is("signature", &nlohmann::json::is_string) &&
              is("iteration", &nlohmann::json::is_number_integer) &&
              is("arrays", &nlohmann::json::is_array) && is("checksum", &nlohmann::json::is_string))
      << path << ": corrupt checkpoint header";
  for (const auto& a : h["arrays"]) {
    user_assert(a.is_object() && a.contains("name") && a["name"].is_string() && a.contains("shape") &&
                a["shape"].is_array())
        << path << ": corrupt checkpoint header";
  }
  user_assert(h["solver"].get<std::string>() == solver)
      << path << ": the checkpoint is of the solver '" << h["solver"].get<std::string>() << "', not '"
      << solver << "'";
  // Adaptive steps (pc's and ladmm's default) record their scalars: say which
  // kind the checkpoint has when it differs from this run's.
  const bool saved_adaptive = h.contains("scalars") && h["scalars"].is_object() && !h["scalars"].empty();
  const bool run_adaptive = scalars && !scalars->empty();
  const std::string steps_hint =
      saved_adaptive == run_adaptive ? ""
      : saved_adaptive
          ? " (it was saved with adaptive steps, pc's and ladmm's default: resume without --fixed-steps / "
            "adaptive_steps = false, with its --check-every)"
          : " (it was saved with fixed steps: resume with --fixed-steps / adaptive_steps = false)";
  user_assert(h["signature"].get<std::string>() == signature)
      << path
      << ": the checkpoint belongs to another run: the problem, fuse, the step sizes (fixed, or adaptive with "
         "their check interval) and the hqs continuation (with max_iters where it spreads the levels) must be "
         "those it was saved with"
      << steps_hint;
  const double saved_at = h["iteration"].get<double>();  // compared as a double: no integer overflows
  user_assert(saved_at >= 0 && saved_at <= max_iters)
      << path << ": the checkpoint's iteration " << h["iteration"].dump() << " is outside 0.." << max_iters;
  const int64_t iteration = static_cast<int64_t>(saved_at);
  // Names and shapes, then the bytes: all of them, checked against the checksum before any is used.
  size_t off = kMagicBytes + 8 + len, need = 0;
  user_assert(h["arrays"].size() == state->size()) << path << ": the checkpoint holds " << h["arrays"].size()
                                                   << " arrays, the solver state " << state->size();
  std::set<std::string> seen;
  for (const auto& a : h["arrays"]) {
    std::string name = a["name"].get<std::string>();
    auto it = state->find(name);
    user_assert(it != state->end()) << path << ": unexpected array '" << name << "'";
    user_assert(seen.insert(name).second) << path << ": the array '" << name << "' appears twice";
    Shape shape;
    try {
      shape = a["shape"].get<Shape>();
    } catch (const nlohmann::json::exception&) {
      user_error << path << ": array '" << name << "' has a corrupt shape";
    }
    user_assert(shape == it->second.shape)
        << path << ": array '" << name << "' has shape " << shape_to_string(shape) << ", the solver's is "
        << shape_to_string(it->second.shape);
    need += it->second.data.size() * sizeof(float);
  }
  user_assert(bytes.size() - off == need)
      << path << ": the checkpoint has " << bytes.size() - off << " bytes of data, its arrays need " << need;
  // The scalars (adaptive step sizes): exactly the names the solver keeps.
  const bool has_scalars = h.contains("scalars");
  const size_t want_scalars = scalars ? scalars->size() : 0;
  user_assert(!has_scalars || h["scalars"].is_object()) << path << ": corrupt checkpoint header";
  user_assert((has_scalars ? h["scalars"].size() : 0) == want_scalars)
      << path << ": the checkpoint holds " << (has_scalars ? h["scalars"].size() : 0)
      << " step sizes, the solver keeps " << want_scalars << " (adaptive steps must be as they were saved)";
  if (has_scalars) {
    for (const auto& [name, v] : h["scalars"].items()) {
      user_assert(scalars->count(name) && v.is_number() && std::isfinite(v.get<double>()))
          << path << ": unexpected or non-finite step size '" << name << "'";
      // As the options' rules have them (solvers/options.h): a step size
      // (pc_tau, admm_rho, ...) > 0; the adaptation's own counts and
      // factors ("_admm_changes") >= 0; each in float32's range.
      const double x = v.get<double>();
      const bool step = name.empty() || name[0] != '_';
      user_assert(fits_float32(x) && (step ? x > 0 : x >= 0))
          << path << ": the checkpoint's " << (step ? "step size " : "") << "'" << name << "' is " << x
          << "; it must be " << (step ? "> 0" : ">= 0") << " and within float32's range (a damaged or forged file)";
    }
  }
  const std::string data = bytes.substr(off);
  const std::string listed = h["arrays"].dump() + (has_scalars ? "|" + h["scalars"].dump() : "");
  user_assert(checksum(h["solver"].get<std::string>(), iteration, h["signature"].get<std::string>(), listed,
                       data) == h["checksum"].get<std::string>())
      << path << ": the checkpoint is corrupt (its checksum does not match its contents)";
  if (has_scalars) {
    for (const auto& [name, v] : h["scalars"].items()) (*scalars)[name] = v.get<double>();
  }
  size_t at = 0;
  for (const auto& a : h["arrays"]) {
    Array& dst = state->at(a["name"].get<std::string>());
    std::memcpy(dst.data.data(), data.data() + at, dst.data.size() * sizeof(float));
    at += dst.data.size() * sizeof(float);
    for (float v : dst.data) {
      user_assert(std::isfinite(v)) << path << ": the checkpoint's array '" << a["name"].get<std::string>()
                                    << "' holds NaN or Inf values";
    }
  }
  return static_cast<int>(iteration);
}

}  // namespace proxc::internal
