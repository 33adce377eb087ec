// A program that uses proxc as a library: isotropic TV denoising of an image
// with nonneg, solved by Pock–Chambolle (the program of docs/api.md).
//
//   denoise NOISY RESULT    (.npy, .png or .tif/.tiff)
#include <proxc/proxc.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  proxc::Array b = proxc::load_array(argv[1]);
  proxc::Problem problem;
  proxc::Expr x = problem.variable(b.shape(), "x");
  problem.minimize(proxc::sum_squares(x - b) + 0.1 * proxc::group_norm1(proxc::grad(x), {2}) +
                   proxc::nonneg(x));
  proxc::SolverOptions options;
  options.solver = proxc::SolverKind::PockChambolle;
  options.max_iters = 100;
  options.eps_abs = 0;
  options.eps_rel = 0;
  proxc::SolverSummary summary = proxc::solve(problem, options);
  std::cout << summary.brief_report() << "\n";
  proxc::save_array(argv[2], problem.value(x));
  return 0;
}
