// Slabs of rows over the ranks of a distributed solve (slabs.h): which
// problems can be cut, the ghost width from the iteration program, the slab
// problem, masks for the owned rows' norms, and the moves of rows between
// ranks.
#include "solvers/slabs.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "support/error.h"

namespace proxc::internal {

namespace {

// Adds the seconds of its life to *total.
class Timer {
 public:
  explicit Timer(double* total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
  ~Timer() { *total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

 private:
  double* total_;
  std::chrono::steady_clock::time_point t0_;
};

// How far along the first axis an operator reads: the rows between an output
// row and the farthest input row it depends on, in the forward and the
// adjoint alike. A UserError for an operator that moves rows.
class Reach {
 public:
  int64_t of(const ExprNode* n) {
    auto it = memo_.find(n);
    if (it != memo_.end()) return it->second;
    const int64_t r = compute(n);
    memo_[n] = r;
    return r;
  }

 private:
  int64_t compute(const ExprNode* n) {
    const auto& a = n->args;
    switch (n->kind) {
      case ExprKind::Variable:
      case ExprKind::Constant:
        return 0;
      case ExprKind::Grad:
        return of(a[0].get()) + 1;
      case ExprKind::Conv: {
        // y[m] reads x[m − i + kh//2] for i in [0, kh): kh//2 rows back, kh − 1 − kh//2 ahead.
        const int64_t kh = a[0]->shape.at(0);
        return of(a[1].get()) + std::max(kh / 2, kh - 1 - kh / 2);
      }
      case ExprKind::MulElemwise:
        return of(a[1].get());
      case ExprKind::Scale:
      case ExprKind::Neg:
        return of(a.back().get());
      case ExprKind::MulColor:
        user_assert(a[0]->rank() > 1) << refusal(n, "it mixes the rows of a one-dimensional array");
        return of(a[0].get());
      case ExprKind::PxwiseMatrixmult:  // its matrices are sliced with the rows (rebuild)
        user_assert(a[1]->rank() > 1) << refusal(n, "it mixes the rows of a one-dimensional array");
        return of(a[1].get());
      case ExprKind::Add:
      case ExprKind::Sub: {
        int64_t r = 0;
        for (const Expr& e : a) r = std::max(r, of(e.get()));
        return r;
      }
      case ExprKind::Subsample:
        user_assert(!n->ints.empty() && n->ints[0] == 1) << refusal(n, "it subsamples the rows (steps[0] > 1)");
        return of(a[0].get());
      default:
        break;
    }
    user_error << refusal(n, "it moves values between rows");
    return 0;
  }

  static std::string refusal(const ExprNode* n, const char* why) {
    return std::string("--distributed cuts the variables into slabs of rows (their first axis); the operator ") +
           to_string(n->kind) + " cannot run on a slab: " + why;
  }

  std::unordered_map<const ExprNode*, int64_t> memo_;
};

// A prox that couples rows: it cannot run on a slab.
void check_local(const FunctionTerm& t) {
  const std::string name = term_function_name(t);
  user_assert(t.kind != FunctionKind::UserProx)
      << "--distributed: the prox function '" << name
      << "' is the user's own, which may read any pixel of the image: it cannot run on a slab of rows";
  if (t.kind == FunctionKind::GroupNorm1 || t.kind == FunctionKind::WeightedGroupNorm1) {
    user_assert(std::find(t.axes.begin(), t.axes.end(), 0) == t.axes.end())
        << "--distributed: " << name << " groups along axis 0, the rows that the ranks split";
  }
}

std::string mask_name(const Shape& s) {
  std::string n = "owned_rows";
  for (int64_t e : s) n += "_" + std::to_string(e);
  return n;
}

Shape with_rows(Shape s, int64_t rows) {
  s.at(0) = rows;
  return s;
}

}  // namespace

Slabs::Slabs(const Problem& p, const std::vector<StepProgram>& programs, Communicator& comm) : comm_(comm) {
  const int ranks = comm.size(), rank = comm.rank();
  user_assert(ranks >= 1 && rank >= 0 && rank < ranks)
      << "the communicator says rank " << rank << " of " << ranks;
  // Rows: the variables' first axis, the same for all of them.
  const std::vector<Expr> vars = p.variables();
  for (const Expr& v : vars) {
    user_assert(v->rank() >= 1) << "--distributed: the variable '" << v->name_hint << "' is a scalar: it has no rows";
    if (rows_ == 0) rows_ = v->shape[0];
    user_assert(v->shape[0] == rows_) << "--distributed: the variables have " << rows_ << " and " << v->shape[0]
                                      << " rows; the ranks split one number of rows";
  }
  Reach reach;
  for (const FunctionTerm& t : p.terms) {
    check_local(t);
    reach.of(t.arg.get());
    user_assert(t.arg->rank() >= 1 && t.arg->shape[0] == rows_)
        << "--distributed: the operand of " << term_function_name(t) << " has shape "
        << shape_to_string(t.arg->shape) << ", not " << rows_ << " rows as the variables";
  }
  // The rows each node's value may be wrong by, after a run from a state
  // whose ghost rows are right.
  std::unordered_map<const StepNode*, int64_t> err;
  std::unordered_map<const StepNode*, bool> from_reduction;
  int64_t g = 0;
  std::vector<Step> nodes;
  for (const StepProgram& program : programs) {
    for (const Step& n : program.nodes()) nodes.push_back(n);
  }
  for (const Step& n : nodes) {
    if (err.count(n.get())) continue;
    int64_t e = 0;
    bool reduced = is_reduction(n->kind);
    for (const Step& a : n->args) {
      e = std::max(e, err.at(a.get()));
      if (from_reduction.at(a.get()) && !n->shape.empty() && !is_reduction(n->kind)) {
        user_error << "--distributed: the " << p.solver
                   << " iteration scales arrays by a norm over the whole image: it cannot run on slabs";
      }
      reduced = reduced || (from_reduction.at(a.get()) && n->shape.empty());
    }
    if (n->kind == StepKind::Forward || n->kind == StepKind::Adjoint) e += reach.of(n->expr.get());
    if (n->kind == StepKind::Prox || n->kind == StepKind::Value) check_local(*n->term);
    user_assert(n->kind != StepKind::CirculantSolve)
        << "--distributed: the " << p.solver
        << " x-update solves with FFTs over the whole image (a circular conv whose Gram matrix it inverts): "
           "use --solver pc or ladmm, which apply the conv as an operator on each slab, or add a term that "
           "makes admm's x-update a CG solve";
    err[n.get()] = e;
    from_reduction[n.get()] = reduced;
    g = std::max(g, e);
  }
  g_ = ranks == 1 ? 0 : static_cast<int>(g);
  // Owned rows: blocks in rank order.
  const int64_t begin = rows_ * rank / ranks, end = rows_ * (rank + 1) / ranks;
  const int64_t fewest = rows_ / ranks;
  user_assert(fewest >= std::max<int64_t>(g_, 1))
      << "--distributed: " << rows_ << " rows over " << ranks << " ranks leave " << fewest
      << " rows to a rank, and each needs at least " << std::max<int64_t>(g_, 1)
      << " (the rows one iteration reads across a slab's edge" << (g_ > 0 ? "" : ", or 1") << "): use fewer ranks";
  auto push = [&](int64_t from, int64_t to) {
    for (int64_t r = from; r < to; ++r) global_row_.push_back((r + rows_) % rows_);
  };
  const int64_t h = end - begin;
  if (ranks == 1) {
    push(0, rows_);
    owned_begin_ = 0;
  } else if (rank == 0) {
    owned_begin_ = 0, after_ = h, before_ = h + g_;
    push(begin, end + g_);
    push(rows_ - g_, rows_);
  } else if (rank == ranks - 1) {
    after_ = 0, before_ = g_, owned_begin_ = 2 * g_;
    push(0, g_);
    push(begin - g_, end);
  } else {
    before_ = 0, owned_begin_ = g_, after_ = g_ + h;
    push(begin - g_, end + g_);
  }
  owned_end_ = owned_begin_ + h;

  // The slab problem: every array of rows cut (kernels and colour matrices kept).
  std::unordered_map<const ExprNode*, Expr> memo;
  std::function<Expr(const Expr&)> rebuild = [&](const Expr& e) -> Expr {
    if (!e) return e;
    auto it = memo.find(e.get());
    if (it != memo.end()) return it->second;
    Expr out;
    if (e->is_variable()) {
      out = make_variable(with_rows(e->shape, slab_rows()), e->name_hint);
    } else if (e->is_constant()) {
      if (e->rank() >= 1 && e->shape[0] == rows_) {
        auto data = std::make_shared<ConstantData>();
        data->array = slice(e->constant->array);
        data->source.type = ConstantSource::Type::Inline;
        out = make_constant(std::move(data), e->name_hint);
      } else {
        out = e;
      }
    } else {
      std::vector<Expr> args = e->args;
      for (size_t i = 0; i < args.size(); ++i) {
        const bool parameter = (e->kind == ExprKind::Conv && i == 0) || (e->kind == ExprKind::MulColor && i == 1);
        if (!parameter) args[i] = rebuild(args[i]);
      }
      out = with_args(e, std::move(args));
    }
    memo[e.get()] = out;
    return out;
  };
  slab_ = p;
  for (FunctionTerm& t : slab_.terms) {
    t.arg = rebuild(t.arg);
    for (Param* q : {&t.b, &t.c, &t.lower, &t.upper}) {
      if (q->array) q->array = rebuild(q->array);
    }
    t.counts = rebuild(t.counts);
    t.weight = rebuild(t.weight);
  }
}

Array Slabs::slice(const Array& whole) const {
  internal_assert(whole.rank() >= 1 && whole.shape[0] == rows_) << "Slabs: an array of " << whole.shape[0] << " rows";
  const size_t row = static_cast<size_t>(whole.size() / rows_);
  Array out(with_rows(whole.shape, slab_rows()));
  for (size_t r = 0; r < global_row_.size(); ++r) {
    std::memcpy(out.data.data() + r * row, whole.data.data() + static_cast<size_t>(global_row_[r]) * row,
                row * sizeof(float));
  }
  return out;
}


StepProgram Slabs::masked(const StepProgram& program) const {
  std::unordered_map<const StepNode*, Step> memo;
  auto* masks = &masks_;
  for (const Step& n : program.nodes()) {
    std::vector<Step> args;
    bool changed = false;
    for (const Step& a : n->args) {
      args.push_back(memo.at(a.get()));
      changed = changed || args.back() != a;
    }
    user_assert(n->kind != StepKind::Value || slab_rows() == rows_)
        << "--distributed: the program '" << program.name << "' sums a function's value over a slab";
    if (is_reduction(n->kind) && slab_rows() != rows_ && !n->args[0]->shape.empty()) {
      const Shape& s = n->args[0]->shape;
      internal_assert(s[0] == slab_rows()) << "Slabs: a reduction over " << shape_to_string(s);
      const std::string name = mask_name(s);
      if (!masks->count(name)) {
        Array m(s);
        const size_t row = static_cast<size_t>(m.size() / s[0]);
        std::fill(m.data.begin() + static_cast<std::ptrdiff_t>(owned_begin_ * row),
                  m.data.begin() + static_cast<std::ptrdiff_t>(owned_end_ * row), 1.0f);
        (*masks)[name] = std::move(m);
      }
      args[0] = step_binary(StepKind::Mul, args[0], step_input(name, s));
      changed = true;
    }
    if (!changed) {
      memo[n.get()] = n;
      continue;
    }
    auto copy = std::make_shared<StepNode>(*n);
    copy->args = std::move(args);
    memo[n.get()] = copy;
  }
  StepProgram out = program;
  for (auto& [name, root] : out.outputs) root = memo.at(root.get());
  return out;
}

Array Slabs::gather(const Array& slab) const {
  const size_t row = static_cast<size_t>(slab.size() / slab_rows());
  std::vector<float> all;
  comm_.gather(slab.data.data() + static_cast<size_t>(owned_begin_) * row,
               static_cast<size_t>(owned_rows()) * row, &all);
  if (comm_.rank() != 0) return Array();
  internal_assert(all.size() == static_cast<size_t>(rows_) * row) << "Slabs::gather: " << all.size() << " floats";
  Array out(with_rows(slab.shape, rows_));
  std::copy(all.begin(), all.end(), out.data.begin());
  return out;
}

void Slabs::exchange(Array* slab) const {
  if (g_ == 0) return;
  Timer t(&seconds_);
  const size_t row = static_cast<size_t>(slab->size() / slab_rows());
  float* d = slab->data.data();
  const size_t n = static_cast<size_t>(g_) * row;
  bytes_sent_ += 2.0 * static_cast<double>(n * sizeof(float));
  comm_.exchange_ring(d + static_cast<size_t>(owned_begin_) * row,
                      d + static_cast<size_t>(owned_end_ - g_) * row, d + static_cast<size_t>(before_) * row,
                      d + static_cast<size_t>(after_) * row, n);
}

void Slabs::sum(std::map<std::string, double>* scalars) const {
  Timer t(&seconds_);
  std::vector<double> v;
  for (const auto& [k, x] : *scalars) v.push_back(x);
  comm_.sum(v.data(), v.size());
  size_t i = 0;
  for (auto& [k, x] : *scalars) x = v[i++];
}

void Slabs::combine(StepOutputs* out) const {
  sum(&out->scalars);
  for (auto& [k, a] : out->arrays) exchange(&a);
}

double Slabs::sum(double v) const {
  Timer t(&seconds_);
  comm_.sum(&v, 1);
  return v;
}

}  // namespace proxc::internal
