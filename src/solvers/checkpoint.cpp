// Checkpoints of a solve (checkpoint.h).
#include "solvers/checkpoint.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal {

void save_checkpoint(const std::string& path, const std::string& solver, const std::string& signature,
                     int iteration, const std::map<std::string, Array>& state) {
  nlohmann::ordered_json h;
  h["solver"] = solver;
  h["iteration"] = iteration;
  h["signature"] = signature;
  h["arrays"] = nlohmann::ordered_json::array();
  for (const auto& [name, a] : state) h["arrays"].push_back({{"name", name}, {"shape", a.shape}});
  std::string header = h.dump();
  std::string out = "PROXCKPT1\n";
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  for (const auto& [name, a] : state) {
    out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size() * sizeof(float));
  }
  write_file_atomic(path, out);
}

int load_checkpoint(const std::string& path, const std::string& solver, const std::string& signature,
                    std::map<std::string, Array>* state) {
  std::string bytes = read_file(path);
  user_assert(bytes.size() >= 18 && bytes.compare(0, 10, "PROXCKPT1\n") == 0)
      << path << ": not a proxc checkpoint";
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i)
    len |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[10 + i])) << (8 * i);
  user_assert(len <= bytes.size() - 18) << path << ": truncated checkpoint header";
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(bytes.substr(18, len));
    user_assert(h.is_object() && h.contains("solver") && h["solver"].is_string() && h.contains("signature") &&
                h["signature"].is_string() && h.contains("iteration") && h["iteration"].is_number_integer() &&
                h.contains("arrays") && h["arrays"].is_array())
        << path << ": corrupt checkpoint header";
    for (const auto& a : h["arrays"]) {
      user_assert(a.is_object() && a.contains("name") && a["name"].is_string() && a.contains("shape") &&
                  a["shape"].is_array())
          << path << ": corrupt checkpoint header";
    }
  } catch (const nlohmann::json::exception& e) {
    user_error << path << ": corrupt checkpoint header: " << e.what();
  }
  user_assert(h.value("solver", "") == solver) << path << ": the checkpoint is of the solver '"
                                               << h.value("solver", "") << "', not '" << solver << "'";
  user_assert(h.value("signature", "") == signature) << path
      << ": the checkpoint belongs to another run: the problem, fuse, max_iters, hqs_rho_max and the step sizes "
         "must be those it was saved with";
  size_t off = 18 + len;
  user_assert(h["arrays"].size() == state->size()) << path << ": the checkpoint holds " << h["arrays"].size()
                                                   << " arrays, the solver state " << state->size();
  for (const auto& a : h.at("arrays")) {
    std::string name = a.at("name");
    auto it = state->find(name);
    user_assert(it != state->end()) << path << ": unexpected array '" << name << "'";
    Shape shape = a.at("shape").get<Shape>();
    user_assert(shape == it->second.shape)
        << path << ": array '" << name << "' has shape " << shape_to_string(shape);
    size_t n = it->second.data.size() * sizeof(float);
    user_assert(off + n <= bytes.size()) << path << ": truncated checkpoint data";
    std::memcpy(it->second.data.data(), bytes.data() + off, n);
    off += n;
  }
  user_assert(off == bytes.size()) << path << ": trailing bytes after the checkpoint data";
  int iteration = h.at("iteration").get<int>();
  user_assert(iteration >= 0) << path << ": negative iteration count";
  return iteration;
}

}  // namespace proxc::internal
