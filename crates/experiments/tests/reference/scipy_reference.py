"""Reference values for tests/stats_reference.rs, computed once with SciPy.

Run: python3 scipy_reference.py   (SciPy 1.17.1, NumPy 2.4.6 when the values were taken)
The output is pasted into the Rust test as literals.
"""
import numpy as np
from scipy import stats


def f(v):
    """A float as a Rust literal."""
    v = float(v)
    if v == float("inf"):
        return "f64::INFINITY"
    return repr(v)


print("# normal_sf: z, sf")
for z in [-2.0, 0.0, 0.5, 1.959963984540054, 3.0, 6.0, 9.0]:
    print(f"({f(z)}, {f(stats.norm.sf(z))}),")

print("# two_proportion_z: x1, n1, x2, n2, z, p")
for x1, n1, x2, n2 in [(45, 1000, 30, 1000), (12, 200, 25, 210), (500, 5000, 560, 5000),
                       (3, 50, 0, 60), (120, 1000, 20, 1000), (7, 7, 3, 9)]:
    table = np.array([[x1, n1 - x1], [x2, n2 - x2]])
    chi2, p, _, _ = stats.chi2_contingency(table, correction=False)
    z = np.sign(x1 / n1 - x2 / n2) * np.sqrt(chi2)
    print(f"({x1}, {n1}, {x2}, {n2}, {f(z)}, {f(p)}),")

print("# fisher_exact: a, b, c, d, odds, p")
for a, b, c, d in [(3, 1, 1, 3), (8, 2, 1, 5), (0, 10, 5, 5), (1, 99, 7, 93),
                   (20, 980, 35, 965), (2, 0, 0, 2), (10, 5, 3, 12), (0, 300, 9, 291),
                   (1, 2, 3, 400)]:
    res = stats.fisher_exact([[a, b], [c, d]], alternative="two-sided")
    print(f"({a}, {b}, {c}, {d}, {f(res.statistic)}, {f(res.pvalue)}),")

print("# mann_whitney_u raw: x, y, u1, p")
rng = np.random.default_rng(20261130)
raw_cases = [
    ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]),                       # exact, no ties
    ([3.1, 0.2, 5.5, 2.4, 1.7], [4.0, 6.1, 7.3, 2.9, 8.8, 5.0]),    # exact, no ties
    ([1.0, 2.0, 2.0, 3.0, 5.0], [2.0, 3.0, 3.0, 4.0, 6.0, 7.0]),    # small with ties
    ([float(v) for v in rng.integers(0, 10, 30)], [float(v) for v in rng.integers(1, 12, 40)]),
    ([round(float(v), 3) for v in rng.normal(0.0, 1.0, 25)], [round(float(v), 3) for v in rng.normal(0.4, 1.0, 20)]),
    ([float(v) for v in range(1, 9)], [float(v) + 0.5 for v in range(1, 31)]),  # exact, n1 = 8
]
for x, y in raw_cases:
    res = stats.mannwhitneyu(x, y, alternative="two-sided")
    print(f"(&{x!r}, &{y!r}, {f(res.statistic)}, {f(res.pvalue)}),")

print("# mann_whitney_u_binned: x counts, y counts, u1, p")
for hx, hy in [([0, 5, 10, 20, 5], [0, 2, 8, 25, 15]), ([100, 300, 250, 80, 20], [90, 310, 240, 100, 40, 5]),
               ([1, 0, 2], [0, 3, 1])]:
    x = np.repeat(np.arange(len(hx)), hx)
    y = np.repeat(np.arange(len(hy)), hy)
    res = stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic")
    print(f"(&{hx!r}, &{hy!r}, {f(res.statistic)}, {f(res.pvalue)}),")

print("# holm: p values, adjusted (manual step-down; statsmodels' multipletests(method='holm') gives the same)")
def holm(p):
    p = np.asarray(p, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adj[i] = running
    return adj
for p in [[0.01, 0.04, 0.03, 0.005], [0.2, 0.001, 0.8, 0.012, 0.04, 0.03], [0.5]]:
    adjusted = ", ".join(f(v) for v in holm(p))
    print(f"(&{p!r}, &[{adjusted}]),")
