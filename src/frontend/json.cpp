#include "frontend/json.h"

#include <cmath>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "frontend/constant_io.h"
#include "frontend/plugin.h"
#include "emulate/fold.h"
#include "proxc/prox_fn.h"
#include "ir/operators.h"
#include "ir/printer.h"
#include "ir/traverse.h"
#include "support/error.h"

namespace proxc::internal {

using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kFormat = "proxc.problem";
constexpr int kVersion = 1;

// ---- Writing -------------------------------------------------------------------------------------

Json scalar_json(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

class JsonWriter {
 public:
  JsonWriter(const Problem& p, const JsonPrintOptions& o) : p_(p), opts_(o), plan_(p) {}

  Json write() {
    Json root;
    root["format"] = kFormat;
    root["version"] = kVersion;
    root["passes_run"] = p_.passes_run;
    root["solver"] = p_.solver;
    root["knorm"] = p_.knorm;
    Json nodes = Json::array();
    for (const Expr& e : plan_.order()) {
      ids_[e.get()] = static_cast<int64_t>(nodes.size());
      nodes.push_back(node(e.get()));
    }
    root["nodes"] = std::move(nodes);
    Json terms = Json::array();
    for (const FunctionTerm& t : p_.terms) terms.push_back(term(t));
    root["terms"] = std::move(terms);
    return root;
  }

 private:
  int64_t id(const Expr& e) const { return ids_.at(e.get()); }

  Json node(const ExprNode* n) {
    Json j;
    j["id"] = static_cast<int64_t>(ids_.size() - 1);
    j["kind"] = to_string(n->kind);
    if (plan_.is_bound(n)) j["name"] = plan_.name(n);
    j["shape"] = n->shape;
    if (!n->args.empty()) {
      Json args = Json::array();
      for (const Expr& a : n->args) args.push_back(id(a));
      j["args"] = std::move(args);
    }
    if (n->is_constant()) j["source"] = source(n);
    // The attributes, one field per slot that is not an operand (the table's keys).
    const OperatorInfo& op = operator_info(n->kind);
    for (size_t i = 0; i < op.slots.size(); ++i) {
      const Slot& slot = op.slots[i];
      switch (slot.role) {
        case SlotRole::Ints: j[slot.key] = slot_ints(*n, i); break;
        case SlotRole::OptionalInts:
          if (!slot_ints(*n, i).empty()) j[slot.key] = slot_ints(*n, i);
          break;
        case SlotRole::Dims: j[slot.key] = n->ints[0]; break;
        case SlotRole::Factor: j[slot.key] = n->scalar; break;
        case SlotRole::Name: j[slot.key] = n->str; break;
        case SlotRole::Option:
          if (!n->str.empty()) j[slot.key] = n->str;
          break;
        case SlotRole::ConstantOrName:
          if (!n->str.empty()) j[slot.key] = n->str;
          break;
        case SlotRole::Shape:  // the node's "shape"
        case SlotRole::Operand:
        case SlotRole::Constant:
        case SlotRole::Operands: break;
      }
    }
    return j;
  }

  Json source(const ExprNode* n) {
    const ConstantSource& s = n->constant->source;
    Json j;
    bool inline_data = s.type == ConstantSource::Type::Inline ||
                       (s.type == ConstantSource::Type::File && opts_.inline_constants);
    if (inline_data) {
      j["type"] = "inline";
      j["data"] = n->constant->array.data;
      return j;
    }
    switch (s.type) {
      case ConstantSource::Type::File:
        j["type"] = "file";
        j["path"] = relative_path(s.resolved_path, opts_.base_dir);
        j["hash"] = s.hash;
        if (opts_.pin_hashes || s.pinned) j["pinned"] = true;
        break;
      case ConstantSource::Type::Gaussian:
        j["type"] = "gaussian";
        j["size"] = s.gaussian_size;
        j["sigma"] = s.gaussian_sigma;
        break;
      case ConstantSource::Type::Scalar:
        j["type"] = "scalar";
        j["value"] = s.scalar;
        break;
      case ConstantSource::Type::Inline:
        break;
      case ConstantSource::Type::Derived:
        internal_error << "a derived constant reached the JSON writer (print_json unfolds them)";
    }
    return j;
  }

  Json param(const Param& q) {
    if (q.array) return Json{{"node", id(q.array)}};
    return scalar_json(q.scalar);
  }

  Json term(const FunctionTerm& t) {
    Json j;
    j["function"] = to_string(t.kind);
    j["arg"] = id(t.arg);
    j["alpha"] = t.alpha;
    j["beta"] = t.beta;
    j["b"] = param(t.b);
    j["c"] = param(t.c);
    j["gamma"] = t.gamma;
    j["d"] = t.d;
    if (t.kind == FunctionKind::UserProx) {
      j["name"] = t.user_name;
      Json params = Json::object();
      for (size_t i = 0; i < t.user_params.size(); ++i) params[user_param_name(t, i)] = t.user_params[i];
      j["params"] = params;
    }
    for (const TermSlot& slot : function_info(t.kind).slots) {
      switch (slot.role) {
        case TermSlotRole::Axes: j[slot.key] = t.axes; break;
        case TermSlotRole::Counts: j[slot.key] = id(t.counts); break;
        case TermSlotRole::Weight: j[slot.key] = id(t.weight); break;
        case TermSlotRole::Lower:
        case TermSlotRole::Upper: j[slot.key] = param(bound_param(t, slot)); break;
      }
    }
    j["role"] = to_string(t.role);
    return j;
  }

  const Problem& p_;
  const JsonPrintOptions& opts_;
  PrintPlan plan_;
  std::unordered_map<const ExprNode*, int64_t> ids_;
};

// ---- Reading -------------------------------------------------------------------------------------

class JsonReader {
 public:
  JsonReader(const std::string& path, const std::string& base_dir) : path_(path), base_dir_(base_dir) {}

  Problem read(const std::string& text) {
    Json root;
    // A key twice in one object would be read as either value: refused.
    std::vector<std::set<std::string>> keys;
    auto no_duplicates = [&](int, nlohmann::json::parse_event_t event, Json& parsed) {
      if (event == nlohmann::json::parse_event_t::object_start) keys.emplace_back();
      if (event == nlohmann::json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
      if (event == nlohmann::json::parse_event_t::key && !keys.empty()) {
        const std::string key = parsed.get<std::string>();
        user_assert(keys.back().insert(key).second) << path_ << ": invalid JSON: the key \"" << key
                                                    << "\" appears twice in one object";
      }
      return true;
    };
    try {
      root = Json::parse(text, no_duplicates);
    } catch (const nlohmann::json::exception& e) {  // syntax errors, and numbers out of range
      user_error << path_ << ": invalid JSON: " << e.what();
    }
    user_assert(root.is_object()) << path_ << ": expected a JSON object at the top level";
    user_assert(root.contains("format") && root["format"] == kFormat)
        << path_ << ": not a proxc problem (field \"format\" must be \"" << kFormat << "\")";
    int64_t version = integer(root, "version", "");
    user_assert(version == kVersion) << path_ << ": unsupported version " << version << " (this proxc reads "
                                     << kVersion << ")";
    Problem p;
    if (root.contains("passes_run")) {
      const Json& pr = field(root, "passes_run", "");
      user_assert(pr.is_array()) << path_ << ": \"passes_run\" must be a list of pass names";
      for (const Json& s : pr) {
        user_assert(s.is_string()) << path_ << ": \"passes_run\" must be a list of pass names";
        p.passes_run.push_back(s.get<std::string>());
      }
    }
    if (root.contains("passes_run") || root.contains("solver") || root.contains("knorm")) p.record_origin = path_;
    if (root.contains("solver")) p.solver = string(root, "solver", "");
    if (root.contains("knorm")) {
      p.knorm = number(root, "knorm", "");
      user_assert(p.knorm >= 0) << path_ << ": \"knorm\" must be >= 0";
    }
    const Json& nodes = field(root, "nodes", "");
    user_assert(nodes.is_array()) << path_ << ": \"nodes\" must be a list";
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::string ctx = "nodes[" + std::to_string(i) + "]";
      try {
        nodes_.push_back(node(nodes[i], ctx, static_cast<int64_t>(i)));
      } catch (const UserError& e) {
        rethrow(e, ctx);
      }
    }
    const Json& terms = field(root, "terms", "");
    user_assert(terms.is_array()) << path_ << ": \"terms\" must be a list";
    for (size_t i = 0; i < terms.size(); ++i) {
      std::string ctx = "terms[" + std::to_string(i) + "]";
      try {
        p.terms.push_back(term(terms[i], ctx));
      } catch (const UserError& e) {
        rethrow(e, ctx);
      }
    }
    try {
      verify(p);
    } catch (const UserError& e) {
      rethrow(e, "");
    }
    return p;
  }

 private:
  [[noreturn]] void rethrow(const UserError& e, const std::string& ctx) {
    std::string msg = e.what();
    std::string prefix = where(ctx);
    if (msg.rfind(path_ + ":", 0) == 0) throw;  // already located
    throw UserError(prefix + msg);
  }

  const Json& field(const Json& obj, const char* key, const std::string& ctx) {
    user_assert(obj.is_object()) << path_ << ": " << (ctx.empty() ? "" : ctx + ": ") << "expected an object";
    auto it = obj.find(key);
    user_assert(it != obj.end()) << path_ << ": " << (ctx.empty() ? "" : ctx + ": ") << "missing field \""
                                 << key << "\"";
    return *it;
  }

  int64_t integer(const Json& obj, const char* key, const std::string& ctx) {
    const Json& v = field(obj, key, ctx);
    user_assert(v.is_number_integer()) << path_ << ": " << ctx << (ctx.empty() ? "" : ": ") << "field \""
                                       << key << "\" must be an integer";
    return v.get<int64_t>();
  }

  // "FILE: CTX: " (or "FILE: " at the top level): where a field's message says it is.
  std::string where(const std::string& ctx) const { return path_ + ": " + (ctx.empty() ? "" : ctx + ": "); }

  double number(const Json& obj, const char* key, const std::string& ctx) {
    const Json& v = field(obj, key, ctx);
    user_assert(v.is_number()) << where(ctx) << "field \"" << key << "\" must be a number";
    double d = v.get<double>();
    user_assert(std::isfinite(d)) << where(ctx) << "field \"" << key << "\" must be finite";
    user_assert(fits_float32(d)) << where(ctx) << "field \"" << key << "\" is " << d
                                 << ", beyond float32's range (±3.4e38), in which proxc computes";
    return d;
  }

  std::vector<int64_t> ints(const Json& obj, const char* key, const std::string& ctx) {
    const Json& v = field(obj, key, ctx);
    user_assert(v.is_array() && v.size() <= 16) << where(ctx) << "field \"" << key
                                                << "\" must be a short list of integers";
    std::vector<int64_t> out;
    for (const Json& e : v) {
      user_assert(e.is_number_integer()) << where(ctx) << "field \"" << key << "\" must be a list of integers";
      out.push_back(e.get<int64_t>());
    }
    return out;
  }

  std::string string(const Json& obj, const char* key, const std::string& ctx) {
    const Json& v = field(obj, key, ctx);
    user_assert(v.is_string()) << where(ctx) << "field \"" << key << "\" must be a string";
    return v.get<std::string>();
  }

  Expr ref(const Json& v) {
    user_assert(v.is_number_integer()) << "a node reference must be an integer id";
    int64_t id = v.get<int64_t>();
    user_assert(id >= 0 && id < static_cast<int64_t>(nodes_.size()))
        << "node reference " << id << " does not name an earlier node";
    return nodes_[static_cast<size_t>(id)];
  }

  Expr node(const Json& j, const std::string& ctx, int64_t index) {
    user_assert(j.is_object()) << "expected an object";
    user_assert(integer(j, "id", ctx) == index) << "field \"id\" must equal the node's position " << index;
    ExprKind kind;
    std::string k = string(j, "kind", ctx);
    user_assert(expr_kind_from_string(k, &kind)) << "unknown node kind \"" << k << "\"";
    std::string name = j.contains("name") ? string(j, "name", ctx) : "";
    Shape shape = ints(j, "shape", ctx);
    std::vector<Expr> args;
    if (j.contains("args")) {
      const Json& a = field(j, "args", ctx);
      user_assert(a.is_array()) << "field \"args\" must be a list of node ids";
      for (const Json& e : a) args.push_back(ref(e));
    }
    Expr e;
    if (kind == ExprKind::Variable || kind == ExprKind::Constant) {
      user_assert(args.empty()) << k << " takes 0 operands, got " << args.size();
      e = kind == ExprKind::Variable ? make_variable(shape, name) : constant(j, ctx, shape, name);
    } else {
      e = fold_constant(make_operator(kind, operator_args(j, ctx, kind, shape, std::move(args))));
    }
    user_assert(e->shape == shape) << k << ": recorded shape " << shape_to_string(shape)
                                   << " differs from the inferred shape " << shape_to_string(e->shape);
    if (!name.empty() && e->name_hint != name) e = with_name_hint(e, name);
    return e;
  }

  // The arguments of an operator node from its fields, slot by slot.
  OperatorArgs operator_args(const Json& j, const std::string& ctx, ExprKind kind, const Shape& shape,
                             std::vector<Expr> args) {
    const OperatorInfo& op = operator_info(kind);
    OperatorArgs out;
    size_t want = 0;
    bool list = false;
    for (const Slot& slot : op.slots) {
      switch (slot.role) {
        case SlotRole::Operand:
        case SlotRole::Constant: ++want; break;
        case SlotRole::Operands: list = true; break;
        case SlotRole::ConstantOrName:
          if (j.contains(slot.key)) out.name = string(j, slot.key, ctx);
          else ++want;
          break;
        case SlotRole::Ints: out.lists.push_back(ints(j, slot.key, ctx)); break;
        case SlotRole::OptionalInts:  // absent: the default (dumps before warp had a target shape)
          out.lists.push_back(j.contains(slot.key) ? ints(j, slot.key, ctx) : std::vector<int64_t>{});
          break;
        case SlotRole::Shape: out.lists.push_back(shape); break;
        case SlotRole::Dims:  // absent: the default (dumps before conv had dims=)
          out.lists.push_back(j.contains(slot.key) ? std::vector<int64_t>{integer(j, slot.key, ctx)}
                                                   : std::vector<int64_t>{});
          break;
        case SlotRole::Factor: out.factor = number(j, slot.key, ctx); break;
        case SlotRole::Name: out.name = string(j, slot.key, ctx); break;
        case SlotRole::Option:
          if (j.contains(slot.key)) out.name = string(j, slot.key, ctx);
          break;
      }
    }
    if (list) {
      user_assert(!args.empty()) << op.keyword << " needs operands";
    } else {
      user_assert(args.size() == want) << op.keyword << " takes " << want << " operands, got " << args.size();
    }
    out.operands = std::move(args);
    return out;
  }

  Expr constant(const Json& j, const std::string& ctx, const Shape& shape, const std::string& name) {
    const Json& src = field(j, "source", ctx);
    std::string type = string(src, "type", ctx);
    if (type == "file") {
      std::string written = string(src, "path", ctx);
      bool pinned = false;
      if (src.contains("pinned")) {
        user_assert(src["pinned"].is_boolean()) << where(ctx) << "field \"pinned\" must be true or false";
        pinned = src["pinned"].get<bool>();
      }
      auto data = load_constant_file(written, base_dir_, string(src, "hash", ctx), pinned);
      user_assert(data->array.shape == shape)
          << data->source.resolved_path << ": the file holds an array of shape " << shape_to_string(data->array.shape)
          << ", the problem recorded " << shape_to_string(shape);
      return make_constant(data, name);
    }
    if (type == "gaussian") return with_name_hint(make_gaussian(ints(src, "size", ctx), number(src, "sigma", ctx)), name);
    if (type == "scalar") {
      user_assert(shape.empty()) << "a scalar constant has shape []";
      return make_scalar_constant(number(src, "value", ctx));
    }
    user_assert(type == "inline") << "unknown constant source type \"" << type << "\"";
    for (int64_t e : shape) user_assert(e > 0) << "constant extents must be positive";
    check_allocation(shape, "inline constant");
    const Json& d = field(src, "data", ctx);
    user_assert(d.is_array() && static_cast<int64_t>(d.size()) == num_elements(shape))
        << "inline data must be a list of " << num_elements(shape) << " numbers for shape "
        << shape_to_string(shape);
    auto data = std::make_shared<ConstantData>();
    data->source.type = ConstantSource::Type::Inline;
    data->array = Array(shape);
    for (size_t i = 0; i < d.size(); ++i) {
      user_assert(d[i].is_number()) << "inline data entry " << i << " is not a number";
      double v = d[i].get<double>();
      user_assert(fits_float32(v))
          << "inline data entry " << i << " is not a finite float32";
      data->array.data[i] = static_cast<float>(v);
    }
    return make_constant(data, name);
  }

  Param param(const Json& v) {
    if (v.is_object()) return Param::of(ref(field(v, "node", "")));
    if (v.is_string()) {
      std::string s = v.get<std::string>();
      user_assert(s == "inf" || s == "-inf") << "a parameter is a number, \"inf\", \"-inf\" or {\"node\": id}";
      return Param::of(s == "inf" ? INFINITY : -INFINITY);
    }
    user_assert(v.is_number()) << "a parameter is a number, \"inf\", \"-inf\" or {\"node\": id}";
    return Param::of(v.get<double>());
  }

  // A prox function of the user's: its registered name and its parameters
  // by name (those left out take their declared defaults).
  void user_prox(const Json& j, const std::string& ctx, FunctionTerm* t) {
    t->user_name = string(j, "name", ctx);
    const proxc_prox_fn* f = proxc_find_prox_fn(t->user_name.c_str());
    user_assert(f) << ctx << ": no prox function named \"" << t->user_name
                   << "\" is registered in this program (a plugin registers its own: --plugin lib.so)";
    Json params = j.contains("params") ? j.at("params") : Json::object();
    user_assert(params.is_object()) << ctx << ".params: an object of numbers by parameter name";
    for (auto it = params.begin(); it != params.end(); ++it) {
      bool known = false;
      for (int i = 0; i < f->num_params; ++i) known = known || it.key() == f->param_names[i];
      user_assert(known) << ctx << ".params: " << t->user_name << " has no parameter \"" << it.key() << "\"";
      user_assert(it.value().is_number()) << ctx << ".params." << it.key() << ": a number";
    }
    for (int i = 0; i < f->num_params; ++i) {
      const char* name = f->param_names[i];
      t->user_params.push_back(params.contains(name) ? params.at(name).get<double>() : f->param_defaults[i]);
    }
  }

  FunctionTerm term(const Json& j, const std::string& ctx) {
    FunctionTerm t;
    std::string fn = string(j, "function", ctx);
    user_assert(function_kind_from_string(fn, &t.kind)) << "unknown function \"" << fn << "\"";
    t.arg = ref(field(j, "arg", ctx));
    t.alpha = number(j, "alpha", ctx);
    t.beta = number(j, "beta", ctx);
    t.b = param(field(j, "b", ctx));
    t.c = param(field(j, "c", ctx));
    t.gamma = number(j, "gamma", ctx);
    t.d = number(j, "d", ctx);
    if (t.kind == FunctionKind::UserProx) user_prox(j, ctx, &t);
    for (const TermSlot& slot : function_info(t.kind).slots) {
      switch (slot.role) {
        case TermSlotRole::Axes: t.axes = ints(j, slot.key, ctx); break;
        case TermSlotRole::Counts: t.counts = ref(field(j, slot.key, ctx)); break;
        case TermSlotRole::Weight: t.weight = ref(field(j, slot.key, ctx)); break;
        case TermSlotRole::Lower:
        case TermSlotRole::Upper: bound_param(t, slot) = param(field(j, slot.key, ctx)); break;
      }
    }
    if (j.contains("role")) {
      std::string role = string(j, "role", ctx);
      if (role == "omega") t.role = TermRole::Omega;
      else if (role == "psi") t.role = TermRole::Psi;
      else user_assert(role == "unassigned") << "unknown role \"" << role << "\" (omega, psi or unassigned)";
    }
    return make_term(t);
  }

  std::string path_;
  std::string base_dir_;
  std::vector<Expr> nodes_;
};

}  // namespace

std::string print_json(const Problem& p, const JsonPrintOptions& options) {
  return JsonWriter(unfold_constants(p), options).write().dump(options.indent) + "\n";
}

Problem parse_json(const std::string& text, const std::string& path, const std::string& base_dir) {
  register_builtin_prox_fns();
  try {
    return JsonReader(path, base_dir).read(text);
  } catch (const nlohmann::json::exception& e) {
    // Every field is type-checked before use; this is the net under those checks.
    throw UserError(path + ": malformed problem: " + e.what());
  }
}

}  // namespace proxc::internal
