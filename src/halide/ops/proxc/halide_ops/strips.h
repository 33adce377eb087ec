/// \file
/// proxc::halide_ops::Graph: the default schedule's placement: root values, vectors, row strips and the row
/// sums of reductions. Part of the Halide-op library (proxc/halide_ops.h includes every part).
#pragma once

#include "proxc/halide_ops/graph.h"

namespace proxc::halide_ops {

inline bool Graph::reads_inline_reduction(const Halide::Internal::Function& f) const {
  auto inner = [&](const Halide::Internal::Function& g) {
    return g.name() != f.name() && !computed_at_root(g);
  };
  return any_call_through(definition_exprs(f), inner, [&](const Halide::Internal::Function& g) {
    return inner(g) && g.has_update_definition();
  });
}

inline void Graph::split_partial_rows() {
  if (schedule_ != Schedule::Default) return;
  const std::map<std::string, RowSums*> by_name = partials_by_name();
  auto splits = [&](const RowSums& rs) {
    return rs.rows.defined() && rs.domain.dimensions() == 1 && !split_partials_.count(rs.partial.name());
  };
  std::map<std::string, std::set<std::string>> groups;  // by the first member
  for (const auto& [b, a] : reduction_partner_) groups[a].insert({a, b});
  std::set<std::string> keep;
  for (const auto& [first, members] : groups) {
    bool all = true;
    for (const std::string& m : members) all = all && splits(*by_name.at(m));
    if (!all) keep.insert(members.begin(), members.end());
  }
  for (auto& [name, rs] : by_name) {
    if (splits(*rs) && !keep.count(name)) split_rows_into_tasks(rs->partial);
  }
}

inline void Graph::split_rows_into_tasks(Halide::Func partial) {
  const Halide::Var px("px_0"), in_strip("px_0_in_strip");
  partial.update(0)
      .split(px, px, in_strip, kRowsPerTask, Halide::TailStrategy::GuardWithIf)
      .parallel(px)
      .serial(in_strip);
  split_partials_.insert(partial.name());
}

inline std::map<std::string, Graph::RowSums*> Graph::partials_by_name() {
  std::map<std::string, RowSums*> by_name;
  for (auto& [id, rs] : partials_) by_name[rs.partial.name()] = &rs;
  return by_name;
}

inline void Graph::schedule_root(Halide::Func f, const std::vector<Halide::Var>& vars,
                                 const std::vector<Halide::Expr>& ext, bool small_inner, int unroll_from,
                                 int lanes) {
  f.compute_root();
  if (vars.empty()) return;
  schedule_vectors(f, vars, ext, small_inner, unroll_from, lanes);
  // The strip loop keeps the row variable's name (fuse_outputs fuses at
  // it; stencils may be computed per strip, see place_strip_candidates).
  // Split when the pipeline is built (split_row_strips), once it is known
  // whether a reduction is gated.
  if (vars.size() >= 2) {
    row_tasks_[f.name()] = vars.front().name();
    row_splits_.push_back({f, ext.front()});
  }
}

inline void Graph::split_row_strips() {
  for (const auto& [f0, rows_extent] : row_splits_) {
    Halide::Func f = f0;
    Halide::Var rows(row_tasks_.at(f.name()));
    Halide::Var row(rows.name() + "_in_strip");
    f.split(rows, rows, row, strip_rows_, Halide::TailStrategy::GuardWithIf).parallel(rows);
  }
  row_splits_.clear();
  strips_split_ = true;
}

inline void Graph::schedule_vectors(Halide::Func f, const std::vector<Halide::Var>& vars,
                                    const std::vector<Halide::Expr>& ext, bool small_inner, int unroll_from,
                                    int lanes) const {
  // Vectorize along the image rows. Arrays of rank 3 and more are images
  // with short trailing axes (grad components, colour channels):
  // vectorizing those would waste most lanes, so the vectors run along
  // axis 1 (the columns) with the short axes looped outside it.
  if (vars.size() >= 3 || small_inner) {
    // Short axes of known extent are unrolled and innermost: the selects on
    // the component index fold away, and Halide interleaves the unrolled
    // vectors into dense stores. Other trailing axes loop outside the columns.
    std::vector<bool> unrolled(vars.size(), false);
    for (size_t i = static_cast<size_t>(std::max(2, unroll_from)); i < vars.size(); ++i) {
      unrolled[i] = const_int(ext[i]).has_value();
    }
    std::vector<Halide::VarOrRVar> order;  // innermost first
    for (size_t i = vars.size(); i-- > 2;) {
      if (unrolled[i]) order.push_back(vars[i]);
    }
    order.push_back(vars[1]);
    for (size_t i = vars.size(); i-- > 2;) {
      if (!unrolled[i]) order.push_back(vars[i]);
    }
    order.push_back(vars[0]);
    if (vars.size() >= 3) f.reorder(order);
    f.vectorize(vars[1], lanes, vector_tail(lanes));
    for (size_t i = 2; i < vars.size(); ++i) {
      if (unrolled[i])
        f.bound(vars[i], 0, static_cast<int>(*const_int(ext[i]))).unroll(vars[i]);
    }
  } else {
    f.vectorize(vars.back(), lanes,
                round_up_.count(f.name()) ? Halide::TailStrategy::RoundUp : vector_tail(lanes));
  }
}

inline void Graph::schedule_at_root(const Val& v) {
  if (gpu()) {
    // At root as the default schedule would have it; schedule_gpu makes it a kernel.
    if (v.is_buffer || (v.vars.empty() && !v.ext.empty())) return;
    if (materialized_.insert(v.f.name()).second) Halide::Func(v.f).compute_root();
    ext_of_[v.f.name()] = v.ext;  // (values made by define() have no rec())
    return;
  }
  if (schedule_ != Schedule::Default) return;
  if (v.is_buffer) return;                       // already a buffer
  if (v.vars.empty() && !v.ext.empty()) return;  // an extern stage: already at root
  // (A strip candidate, already in materialized_, is at root after all.)
  if (strip_candidates_.erase(v.f.name()) == 0 && !materialized_.insert(v.f.name()).second) return;
  schedule_root(v.f, v.vars, v.ext, v.small_inner, v.unroll_from, v.lanes > 0 ? v.lanes : kVectorLanes);
  if (v.loads >= 0 && v.loads <= 2 && v.f.num_update_definitions() == 0 && v.f.outputs() == 1) {
    cheap_roots_.insert(v.f.name());
  }
}

inline Val Graph::stencil(const Val& v, bool local) {
  if (gpu()) {
    // A cheap value is recomputed by each thread that reads it; others are kernels of their own.
    if (!materialized_.count(v.f.name()) && v.loads >= 0 && v.loads <= kStencilInline) return v;
    schedule_at_root(v);
    return v;
  }
  if (schedule_ == Schedule::Default && !materialized_.count(v.f.name()) && v.loads >= 0 &&
      v.loads <= kStencilInline) {
    // Inlined into a reader of other rows than the neighbouring ones: the
    // strip candidates it reads are read there too, so they go to root.
    if (!local) root_candidates_read_by(v.f.function());
    return v;
  }
  if (schedule_ == Schedule::Default && local && !v.is_buffer && v.rank() >= 2 && !v.vars.empty() &&
      (strip_candidates_.count(v.f.name()) || materialized_.insert(v.f.name()).second)) {
    strip_candidates_.emplace(v.f.name(), v);
    return v;
  }
  schedule_at_root(v);
  return v;
}

inline void Graph::root_candidates_read_by(const Halide::Internal::Function& f) {
  if (strip_candidates_.empty()) return;
  std::vector<Val> read;
  any_call_through(
      definition_exprs(f),
      [&](const Halide::Internal::Function& g) {
        return !strip_candidates_.count(g.name()) && !computed_at_root(g);
      },
      [&](const Halide::Internal::Function& g) {
        auto it = strip_candidates_.find(g.name());
        if (it != strip_candidates_.end()) read.push_back(it->second);
        return false;
      });
  for (const Val& c : read) schedule_at_root(c);
}

inline void Graph::place_strip_candidates() {
  if (strip_candidates_.empty()) return;
  std::map<std::string, Halide::Internal::Function> funcs;
  std::set<std::string> output_names;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    if (merged_.count(static_cast<int>(k))) continue;
    const Halide::Internal::Function f = outputs_[k].function();
    output_names.insert(f.name());
    funcs.emplace(f.name(), f);
    for (const auto& [name, g] : Halide::Internal::find_transitive_calls(f)) funcs.emplace(name, g);
  }
  std::map<std::string, Val> candidates;
  candidates.swap(strip_candidates_);
  // Funcs with loops of their own: outputs, candidates, and those scheduled somewhere.
  auto has_loops = [&](const Halide::Internal::Function& g) {
    if (output_names.count(g.name()) || candidates.count(g.name()) || g.has_extern_definition()) return true;
    Halide::LoopLevel level = g.schedule().compute_level();
    return !level.lock().is_inlined();  // (lock: compute_at's level is resolved at lowering)
  };
  // The Funcs with loops that read `name`, directly or through inlined Funcs
  // (an extern stage through its arguments).
  auto readers_of = [&](const std::string& name) {
    std::vector<Halide::Internal::Function> readers;
    for (const auto& [rname, r] : funcs) {
      if (rname == name || !has_loops(r)) continue;
      std::vector<Halide::Expr> exprs = definition_exprs(r);
      bool reads = false;
      for (const Halide::ExternFuncArgument& a : r.extern_arguments()) {
        reads = reads || (a.is_func() && Halide::Internal::Function(a.func).name() == name);
        if (a.is_expr()) exprs.push_back(a.expr);
      }
      reads = reads || any_call_through(
                           exprs, [&](const Halide::Internal::Function& g) { return !has_loops(g); },
                           [&](const Halide::Internal::Function& g) { return g.name() == name; });
      if (reads) readers.push_back(r);
    }
    return readers;
  };
  for (const auto& [name, v] : candidates) {
    const int lanes = v.lanes > 0 ? v.lanes : kVectorLanes;
    const std::vector<Halide::Internal::Function> readers = readers_of(name);
    if (readers.size() == 1) {
      const Halide::Internal::Function& r = readers[0];
      auto task = row_tasks_.find(r.name());
      if (task != row_tasks_.end() && !output_names.count(name) && !r.has_extern_definition() &&
          r.updates().empty() && !fused_.count(r.name()) && !candidates.count(r.name())) {
        Halide::Func f = v.f;
        f.compute_at(Halide::Func(r), Halide::Var(task->second));
        schedule_vectors(f, v.vars, v.ext, v.small_inner, v.unroll_from, lanes);
        continue;
      }
    }
    schedule_root(v.f, v.vars, v.ext, v.small_inner, v.unroll_from, lanes);
  }
}

inline void Graph::fuse_partials() {
  const std::map<std::string, RowSums*> by_name = partials_by_name();
  for (const auto& [b, a] : reduction_partner_) {
    RowSums& ra = *by_name.at(a);
    RowSums& rb = *by_name.at(b);
    if (ra.domain.same_as(rb.domain) && !reads_inline_reduction(ra.partial.function()) &&
        !reads_inline_reduction(rb.partial.function())) {
      rb.partial.update(0).compute_with(ra.partial.update(0), ra.domain[0]);
    } else {
      rb.partial.update(0).compute_with(ra.partial.update(0), Halide::Var("px_0"));
    }
  }
  reduction_partner_.clear();
}

inline void Graph::fuse_partials_into_outputs() {
  if (schedule_ != Schedule::Default || partials_.empty()) return;
  std::map<std::string, Halide::Internal::Function> outs;  // outputs at root in row strips
  std::vector<std::string> out_order;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    if (merged_.count(static_cast<int>(k))) continue;
    const Halide::Func& f = outputs_[k];
    if (!f.defined() || f.is_extern() || f.num_update_definitions() != 0 || !row_tasks_.count(f.name()))
      continue;
    if (outs.emplace(f.name(), f.function()).second) out_order.push_back(f.name());
  }
  auto rows_of = [&](const std::string& name) -> Halide::Expr {
    for (const auto& [f, rows] : row_splits_) {
      if (f.name() == name) return rows;
    }
    return Halide::Expr();
  };
  // What a Func reads, directly or through Funcs inlined into it: the
  // names of the buffers (ImageParams) and the Funcs with loops.
  auto reads = [&](const Halide::Internal::Function& f) {
    std::set<std::string> names;
    std::vector<Halide::Internal::Function> work = {f};
    std::set<std::string> seen = {f.name()};
    while (!work.empty()) {
      Halide::Internal::Function g = work.back();
      work.pop_back();
      struct Reads : Halide::Internal::IRVisitor {
        std::set<std::string>* names;
        std::vector<Halide::Internal::Function> funcs;
        using Halide::Internal::IRVisitor::visit;
        void visit(const Halide::Internal::Call* op) override {
          if (op->call_type == Halide::Internal::Call::Image) names->insert(op->name);
          if (op->call_type == Halide::Internal::Call::Halide && op->func.defined())
            funcs.emplace_back(op->func);
          Halide::Internal::IRVisitor::visit(op);
        }
      } v;
      v.names = &names;
      for (const Halide::Expr& e : definition_exprs(g)) e.accept(&v);
      for (const Halide::Internal::Function& h : v.funcs) {
        if (!seen.insert(h.name()).second) continue;
        Halide::LoopLevel level = h.schedule().compute_level();
        if (!level.lock().is_inlined() || outs.count(h.name()) || h.has_extern_definition()) {
          names.insert(h.name());
        } else {
          work.push_back(h);
        }
      }
    }
    return names;
  };
  auto calls = [](const Halide::Internal::Function& f, const std::string& name) {
    return Halide::Internal::find_transitive_calls(f).count(name) > 0;
  };
  std::map<std::string, std::vector<Halide::Internal::Function>> members;  // of each lead's loop
  std::map<std::string, std::set<std::string>> out_reads;
  auto lead_of = [&](std::string o) {  // the first of o's compute_with group (followed to its end)
    for (size_t steps = 0; steps < group_lead_.size(); ++steps) {
      auto it = group_lead_.find(o);
      if (it == group_lead_.end()) break;
      o = it->second;
    }
    return o;
  };
  for (const std::string& o : out_order) {
    members[lead_of(o)].push_back(outs.at(o));
    out_reads[o] = reads(outs.at(o));
  }
  for (const std::string& id : partial_order_) {
    RowSums& rs = partials_.at(id);
    if (rs.gated || !rs.rows.defined()) continue;
    const Halide::Internal::Function pf = rs.partial.function();
    const std::set<std::string> pr = reads(pf);
    for (const std::string& o : out_order) {
      const std::string lead = lead_of(o);
      if (!outs.count(lead)) continue;
      const Halide::Expr rows = rows_of(lead);
      if (!rows.defined() || !Halide::Internal::equal(rows, rs.rows)) continue;
      const std::set<std::string>& orr = out_reads.at(o);
      const std::vector<Halide::Internal::Function>& loop = members.at(lead);
      bool member_calls_pf = false, pf_calls_member = false;
      for (const Halide::Internal::Function& m : loop) {
        member_calls_pf = member_calls_pf || calls(m, pf.name());
        pf_calls_member = pf_calls_member || calls(pf, m.name());
      }
      if (member_calls_pf) continue;
      // Cheap members to inline, where the row sums read the loop.
      std::map<std::string, Halide::Internal::Function> inline_members;
      if (pf_calls_member && !members_to_inline(pf, loop, &inline_members)) continue;
      bool shares = false;
      for (const std::string& n : pr) shares = shares || orr.count(n);
      for (const auto& [n, c] : inline_members) {
        for (const std::string& r : reads(c)) shares = shares || orr.count(r);
      }
      if (!shares) continue;
      if (!inline_members.empty()) inline_calls(pf, inline_members);
      Halide::Func p = rs.partial;
      split_rows_into_tasks(p);
      p.update(0).compute_with(Halide::Func(outs.at(lead)), Halide::Var(row_tasks_.at(lead)));
      members.at(lead).push_back(pf);
      // Out of its fuse_reductions group.
      for (auto it = reduction_partner_.begin(); it != reduction_partner_.end();) {
        it = it->first == pf.name() || it->second == pf.name() ? reduction_partner_.erase(it) : std::next(it);
      }
      break;
    }
  }
}

inline bool Graph::members_to_inline(const Halide::Internal::Function& pf,
                                     const std::vector<Halide::Internal::Function>& loop,
                                     std::map<std::string, Halide::Internal::Function>* out) const {
  std::set<std::string> names;
  for (const Halide::Internal::Function& m : loop) names.insert(m.name());
  for (const Halide::Internal::Function& c : direct_calls(definition_exprs(pf))) {
    if (c.name() == pf.name()) continue;  // the update's read of the sums themselves
    const bool member = names.count(c.name()) > 0;
    if (member && !cheap_roots_.count(c.name())) return false;
    // (Halide's transitive calls of c include c.)
    std::map<std::string, Halide::Internal::Function> reach = Halide::Internal::find_transitive_calls(c);
    if (member) reach.erase(c.name());
    for (const auto& [n, f] : reach) {
      if (names.count(n)) return false;
    }
    if (member) out->emplace(c.name(), c);
  }
  return !out->empty();
}

inline void Graph::inline_calls(Halide::Internal::Function f,
                                const std::map<std::string, Halide::Internal::Function>& targets) {
  struct Inline : Halide::Internal::IRMutator {
    const std::map<std::string, Halide::Internal::Function>* targets;
    using Halide::Internal::IRMutator::visit;
    Halide::Expr visit(const Halide::Internal::Call* op) override {
      auto t = op->call_type == Halide::Internal::Call::Halide ? targets->find(op->name) : targets->end();
      if (t == targets->end()) return IRMutator::visit(op);
      const Halide::Internal::Function& g = t->second;
      std::map<std::string, Halide::Expr> at;
      for (size_t i = 0; i < op->args.size(); ++i) at[g.args()[i]] = mutate(op->args[i]);
      return Halide::Internal::substitute(at, g.values()[static_cast<size_t>(op->value_index)]);
    }
  } in;
  in.targets = &targets;
  f.mutate(&in);
}

inline int Graph::inline_loads(std::initializer_list<const Val*> operands) const {
  int n = 0;
  for (const Val* o : operands) {
    if (o->rank() == 0) continue;
    if (o->is_buffer || materialized_.count(o->f.name())) {
      n += 1;
    } else if (o->loads >= 0) {
      n += o->loads;
    } else {
      return -1;
    }
  }
  return n;
}

}  // namespace proxc::halide_ops
