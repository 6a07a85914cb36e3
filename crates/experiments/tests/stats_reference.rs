//! The statistics against reference values computed once with SciPy 1.17.1 by
//! `tests/reference/scipy_reference.py` (its output pasted below as literals).

use experiments::stats::{
    fisher_exact, holm, mann_whitney_u, mann_whitney_u_binned, normal_sf, two_proportion_z,
};

/// Relative agreement demanded of every p-value: the implementations are exact up to
/// floating-point rounding, so anything looser would hide a formula error.
const REL: f64 = 1e-9;

fn close(got: f64, want: f64, what: &str) {
    if want.is_infinite() {
        assert_eq!(got, want, "{what}");
        return;
    }
    let tol = REL * want.abs().max(1e-300);
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got:e}, want {want:e}"
    );
}

#[test]
fn normal_tail_matches_scipy() {
    let cases: &[(f64, f64)] = &[
        (-2.0, 0.9772498680518208),
        (0.0, 0.5),
        (0.5, 0.3085375387259869),
        (1.959963984540054, 0.025),
        (3.0, 0.0013498980316300933),
        (6.0, 9.865876450376946e-10),
        (9.0, 1.1285884059538324e-19),
    ];
    for &(z, want) in cases {
        close(normal_sf(z), want, &format!("sf({z})"));
    }
}

#[test]
fn two_proportion_z_matches_scipy_chi2() {
    let cases: &[(u64, u64, u64, u64, f64, f64)] = &[
        (45, 1000, 30, 1000, 1.7654696590094991, 0.07748486513264485),
        (12, 200, 25, 210, -2.085756885971878, 0.0370006506308461),
        (
            500,
            5000,
            560,
            5000,
            -1.9490795209156369,
            0.051285928909989266,
        ),
        (3, 50, 0, 60, 1.9237813231859937, 0.05438199944430447),
        (
            120,
            1000,
            20,
            1000,
            8.763841367493647,
            1.8870732639843747e-18,
        ),
        (7, 7, 3, 9, 2.7325202042558927, 0.006285181643384482),
    ];
    for &(x1, n1, x2, n2, z, p) in cases {
        let got = two_proportion_z(x1, n1, x2, n2).expect("valid counts");
        let what = format!("{x1}/{n1} vs {x2}/{n2}");
        close(got.statistic, z, &what);
        close(got.p_value, p, &what);
    }
}

#[test]
fn fisher_exact_matches_scipy() {
    let cases: &[(u64, u64, u64, u64, f64, f64)] = &[
        (3, 1, 1, 3, 9.0, 0.48571428571428565),
        (8, 2, 1, 5, 20.0, 0.034965034965034975),
        (0, 10, 5, 5, 0.0, 0.032507739938080496),
        (1, 99, 7, 93, 0.1341991341991342, 0.06485940210426507),
        (20, 980, 35, 965, 0.5626822157434402, 0.05464442192549861),
        (2, 0, 0, 2, f64::INFINITY, 0.3333333333333333),
        (10, 5, 3, 12, 8.0, 0.025327687033676133),
        (0, 300, 9, 291, 0.0, 0.0036755896752916173),
        (1, 2, 3, 400, 66.66666666666667, 0.029338073380408648),
    ];
    for &(a, b, c, d, odds, p) in cases {
        let got = fisher_exact(a, b, c, d).expect("non-empty table");
        let what = format!("[[{a}, {b}], [{c}, {d}]]");
        close(got.statistic, odds, &what);
        close(got.p_value, p, &what);
    }
}

#[test]
fn mann_whitney_matches_scipy_exact_and_asymptotic() {
    let cases: &[(&[f64], &[f64], f64, f64)] = &[
        (
            &[1.0, 2.0, 3.0],
            &[4.0, 5.0, 6.0, 7.0],
            0.0,
            0.05714285714285714,
        ),
        (
            &[3.1, 0.2, 5.5, 2.4, 1.7],
            &[4.0, 6.1, 7.3, 2.9, 8.8, 5.0],
            4.0,
            0.05194805194805195,
        ),
        (
            &[1.0, 2.0, 2.0, 3.0, 5.0],
            &[2.0, 3.0, 3.0, 4.0, 6.0, 7.0],
            7.0,
            0.16304505585423734,
        ),
        (
            &[
                8.0, 6.0, 4.0, 3.0, 9.0, 4.0, 9.0, 0.0, 7.0, 4.0, 5.0, 4.0, 3.0, 5.0, 8.0, 6.0,
                4.0, 8.0, 5.0, 9.0, 4.0, 9.0, 7.0, 5.0, 7.0, 7.0, 5.0, 3.0, 0.0, 6.0,
            ],
            &[
                11.0, 9.0, 10.0, 4.0, 2.0, 8.0, 7.0, 2.0, 5.0, 5.0, 11.0, 1.0, 10.0, 10.0, 10.0,
                7.0, 3.0, 3.0, 8.0, 1.0, 11.0, 2.0, 7.0, 5.0, 1.0, 8.0, 4.0, 10.0, 11.0, 6.0, 3.0,
                9.0, 5.0, 10.0, 4.0, 5.0, 3.0, 10.0, 6.0, 11.0,
            ],
            495.0,
            0.21260304282538767,
        ),
        (
            &[
                0.246, -0.442, -1.854, 1.401, 0.659, 0.079, 0.724, -0.385, -1.085, -0.892, 0.372,
                1.594, 0.025, -0.503, -0.006, 0.686, 1.015, -1.353, -0.379, 0.381, -0.073, 1.118,
                0.183, -0.805, -0.543,
            ],
            &[
                -0.417, 1.06, 0.474, -0.885, 1.282, -1.486, -1.659, 0.712, 0.734, 1.74, -0.243,
                0.701, 3.065, 0.594, 0.719, -0.052, 1.087, 0.843, 0.695, -0.689,
            ],
            185.0,
            0.14067452137042066,
        ),
        (
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
            &[
                1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5,
                16.5, 17.5, 18.5, 19.5, 20.5, 21.5, 22.5, 23.5, 24.5, 25.5, 26.5, 27.5, 28.5, 29.5,
                30.5,
            ],
            28.0,
            0.00043596068763351295,
        ),
    ];
    for (i, &(x, y, u1, p)) in cases.iter().enumerate() {
        let got = mann_whitney_u(x, y).expect("non-empty samples");
        close(got.u1, u1, &format!("case {i} U"));
        close(got.p_value, p, &format!("case {i} p"));
    }
    // Cases 0, 1 and 5 have no ties and a sample of at most 8: SciPy's exact method.
    assert!(
        mann_whitney_u(cases[0].0, cases[0].1)
            .expect("non-empty")
            .exact
    );
    assert!(
        !mann_whitney_u(cases[2].0, cases[2].1)
            .expect("non-empty")
            .exact
    );
}

#[test]
fn binned_mann_whitney_matches_scipy_on_expanded_samples() {
    let cases: &[(&[u64], &[u64], f64, f64)] = &[
        (
            &[0, 5, 10, 20, 5],
            &[0, 2, 8, 25, 15],
            727.5,
            0.016955910834257532,
        ),
        (
            &[100, 300, 250, 80, 20],
            &[90, 310, 240, 100, 40, 5],
            278400.0,
            0.05256581542950735,
        ),
        (&[1, 0, 2], &[0, 3, 1], 7.0, 0.8485720888307414),
    ];
    for (i, &(x, y, u1, p)) in cases.iter().enumerate() {
        let got = mann_whitney_u_binned(x, y).expect("non-empty histograms");
        close(got.u1, u1, &format!("case {i} U"));
        close(got.p_value, p, &format!("case {i} p"));
    }
}

#[test]
fn holm_matches_reference_step_down() {
    let cases: &[(&[f64], &[f64])] = &[
        (&[0.01, 0.04, 0.03, 0.005], &[0.03, 0.06, 0.06, 0.02]),
        (
            &[0.2, 0.001, 0.8, 0.012, 0.04, 0.03],
            &[0.4, 0.006, 0.8, 0.06, 0.12, 0.12],
        ),
        (&[0.5], &[0.5]),
    ];
    for &(p, want) in cases {
        let got = holm(p);
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            close(*g, *w, &format!("{p:?}"));
        }
    }
}
