"""Remakes proximal_defaults.json: ProxImaL's default solve() on the
conformance solve problems. Run with ProxImaL importable (its repository on
PYTHONPATH, numpy and scipy installed):

    PYTHONPATH=path/to/ProxImaL python3 tests/python/data/proximal_defaults.py ../shared/conformance > new.json
"""
import contextlib, io, sys, json, numpy as np, time
from proximal import *
D = sys.argv[1].rstrip('/') + '/data/'
b_den = np.load(D+'solve_b_denoise.npy'); b_dec = np.load(D+'solve_b_deconv.npy'); k = np.load(D+'solve_k_gauss5.npy')
b_inp = np.load(D+'solve_b_inpaint.npy'); m = np.load(D+'solve_mask.npy')
def gradient(x):
    g = np.zeros(x.shape + (2,))
    g[:-1, :, 0] = x[1:] - x[:-1]; g[:, :-1, 1] = x[:, 1:] - x[:, :-1]; return g
def circconv(k, x):
    pad = np.zeros(x.shape); pad[:k.shape[0], :k.shape[1]] = k
    pad = np.roll(pad, (-(k.shape[0]//2), -(k.shape[1]//2)), (0, 1))
    return np.real(np.fft.ifft2(np.fft.fft2(x) * np.fft.fft2(pad)))
def iso(g): return np.sqrt((g**2).sum(-1)).sum()
probs = {
 'tv_aniso': (lambda x: sum_squares(x - b_den) + 0.1 * norm1(grad(x)) + nonneg(x),
              lambda x: ((x - b_den)**2).sum() + 0.1 * np.abs(gradient(x)).sum(), b_den.shape),
 'tv_iso': (lambda x: sum_squares(x - b_den) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x),
            lambda x: ((x - b_den)**2).sum() + 0.1 * iso(gradient(x)), b_den.shape),
 'deconv': (lambda x: sum_squares(conv(k, x) - b_dec) + 0.001 * group_norm1(grad(x), [2]) + nonneg(x),
            lambda x: ((circconv(k, x) - b_dec)**2).sum() + 0.001 * iso(gradient(x)), b_dec.shape),
 'inpaint': (lambda x: sum_squares(mul_elemwise(m, x) - b_inp) + 0.05 * group_norm1(grad(x), [2]),
             lambda x: ((m * x - b_inp)**2).sum() + 0.05 * iso(gradient(x)), b_inp.shape),
}
out = {}
for name, (build, f64, shape) in probs.items():
    for solver in ('default', 'pc', 'ladmm', 'admm'):
        x = Variable(shape)
        prob = Problem(build(x))
        t = time.time()
        kw = {} if solver == 'default' else {'solver': solver}
        try:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                val = prob.solve(verbose=1, **kw)
            # The last check printed ("iter i: ...") is where it stopped: i + 1 iterations, or max_iters.
            checks = [int(l.split()[1].rstrip(':')) for l in buf.getvalue().splitlines() if l.startswith('iter ')]
        except Exception as e:
            print(name, solver, 'FAILED', type(e).__name__, e, file=sys.stderr); continue
        xv = np.asarray(x.value, np.float64)
        out[f'{name}_{solver}'] = {'returned': float(val), 'objective_f64': float(f64(xv)),
                                   'objective_f64_at_max0': float(f64(np.maximum(xv, 0))), 'xmin': float(xv.min()),
                                   'last_check': checks[-1] if checks else None,
                                   'seconds': time.time() - t}
print(json.dumps(out, indent=1))
