"""Each estimator family estimates its own fit (``estimate_cost``), before any work."""

import numpy as np
import pytest

import okcore
from okcore.trees.cost import binning_seconds, tree_stages_cost


@pytest.mark.parametrize("name", list(okcore.ESTIMATORS))
def test_every_registered_estimator_costs_its_own_stages(name: str) -> None:
    single = name in ("ok3", "krr")  # one tree, one ridge
    est = okcore.make_estimator(name, {} if single else {"n_estimators": 7})
    cost = est.estimate_cost(500, 6, kernel={"type": "linear"}, n_outputs=3)
    assert isinstance(cost, okcore.FitCost)
    assert cost.n_stages == (1 if single else 7) and cost.rank == 3
    # OKBoost's default grows oblivious trees on dense inputs: histograms at every size
    searches = {"okboost": "histogram"}
    assert cost.search == searches.get(name, "kernel" if name.startswith("krr") else "exact")
    assert cost.memory_bytes > 0 and cost.stage_seconds > 0
    assert cost.disk_bytes >= 8.0 * 500 * 3
    assert cost.seconds == pytest.approx(
        cost.factor_seconds + cost.setup_seconds + 7 ** (not single) * cost.stage_seconds
    )


def test_tree_cost_follows_the_search_and_the_growth_rules() -> None:
    hist = okcore.OK3Regressor(max_bins=32, max_splits=9).estimate_cost(1000, 4)
    assert hist.search == "histogram" and hist.stage_size == 10
    assert hist.setup_seconds == binning_seconds(1000, 4)  # the binning phase's own model
    exact = okcore.OK3Regressor(max_depth=3, splitter="random").estimate_cost(1000, 4)
    assert exact.search == "exact" and exact.stage_size == 8 and exact.setup_seconds == 0.0
    # features tried per node: the rule the growth uses (int(sqrt(p)) for "random")
    sqrt = okcore.OK3Regressor(max_features="sqrt").estimate_cost(1000, 17)
    four = okcore.OK3Regressor(max_features=4).estimate_cost(1000, 17)
    five = okcore.OK3Regressor(max_features=5).estimate_cost(1000, 17)
    assert sqrt.stage_seconds == four.stage_seconds < five.stage_seconds
    assert okcore.OK3Regressor()._tree_params(17).max_features == 17


def test_okboost_resolves_auto_search_as_its_fit_does() -> None:
    best_first = okcore.OKBoostRegressor(tree_type="best-first")
    small = best_first.estimate_cost(100, 3, n_outputs=2)
    large = best_first.estimate_cost(50_000, 3, n_outputs=10)
    assert small.search == "exact" and large.search == "histogram"
    # tree_type="auto" on dense inputs: oblivious trees, histograms at every size
    assert okcore.OKBoostRegressor().estimate_cost(100, 3, n_outputs=2).search == "histogram"


def test_auto_tree_type_costs_the_dearer_of_what_dense_and_sparse_inputs_grow() -> None:
    """Before the fit the inputs' sparsity is unknown: the estimate takes the oblivious
    trees of dense inputs (depth 4 for r > 1, by the rows for one output) with the larger seconds
    and bytes of them and of the best-first trees (J = 10) that sparse inputs grow."""
    kinds = {
        t: okcore.OKBoostRegressor(tree_type=t).estimate_cost(4000, 20, n_outputs=5)
        for t in ("auto", "oblivious", "best-first")
    }
    auto, oblivious, best_first = kinds["auto"], kinds["oblivious"], kinds["best-first"]
    assert (
        (auto.search, auto.stage_size)
        == (oblivious.search, oblivious.stage_size)
        == (
            "histogram",
            16,
        )
    )
    assert best_first.stage_size == 11
    for field in ("setup_seconds", "stage_seconds", "memory_bytes"):
        assert getattr(auto, field) == max(getattr(oblivious, field), getattr(best_first, field))
    one = okcore.OKBoostRegressor().estimate_cost(4000, 20, n_outputs=1)
    assert one.stage_size == 256  # one output, N = 4,000: depth 8
    # a best-first tree size or a search oblivious trees refuse resolve "auto" before the fit
    for params in ({"max_splits": 10}, {"splitter": "random"}, {"max_bins": None}):
        est = okcore.OKBoostRegressor(**params)  # type: ignore[arg-type]
        assert est.resolve_tree_type() == "best-first"
        assert est.estimate_cost(4000, 20, n_outputs=5).stage_size == 11


def test_boosting_counts_its_round_table_not_per_tree_int32_arrays() -> None:
    """The stage loop keeps each round's training leaves in the smallest unsigned type (1
    byte a row up to 256 leaves, 2 up to 65,536) and a uint8 count only when subsampling."""
    n, extra = 20_000, 100

    def per_tree(**params: object) -> float:
        est = okcore.OKBoostRegressor(max_bins=32, **params)  # type: ignore[arg-type]
        more = est.set_params(n_estimators=200).estimate_cost(n, 4, n_outputs=2).memory_bytes
        less = est.set_params(n_estimators=200 - extra).estimate_cost(n, 4, n_outputs=2)
        return (more - less.memory_bytes) / extra

    def leaf_arrays(leaves: int) -> float:
        return 16.0 * leaves * 2 + 256.0 * leaves  # leaf r-vectors (r = 2) and node arrays

    assert per_tree(max_splits=9) == pytest.approx(1.0 * n + leaf_arrays(10))
    assert per_tree(max_splits=299) == pytest.approx(2.0 * n + leaf_arrays(300))
    assert per_tree(max_splits=9, subsample=0.5) == pytest.approx(2.0 * n + leaf_arrays(10))
    forest = okcore.OK3ForestRegressor(max_bins=32, max_splits=9)
    grown = [forest.set_params(n_estimators=m).estimate_cost(n, 4, n_outputs=2) for m in (2, 1)]
    assert grown[0].memory_bytes - grown[1].memory_bytes >= 16.0 * n


def test_krr_cost_counts_basis_vectors_per_stage() -> None:
    cost = okcore.KRRBoostRegressor(n_basis=50, subset_size=400).estimate_cost(10_000, 5)
    assert cost.stage_size == 50 and cost.search == "kernel" and cost.setup_seconds == 0.0
    assert cost.memory_bytes >= 8.0 * 10_000 * 50  # the stage's N x D kernel block


def test_refined_cuts_count_the_raw_inputs_they_keep() -> None:
    """Refined cuts keep the raw inputs (float64) beside the bin codes: 8 p N bytes more."""
    n, p = 20_000, 6
    costs = {
        refine: okcore.OKBoostRegressor(refine_cuts=refine).estimate_cost(n, p, n_outputs=3)
        for refine in (True, False)
    }
    assert costs[True].memory_bytes - costs[False].memory_bytes == 8 * p * n
    assert costs[True].seconds == costs[False].seconds


@pytest.mark.parametrize(("width", "extra"), [(4, 1), (8, 1), (1, 0), (12, 0), (50, 0)])
def test_row_wise_histograms_count_their_row_major_codes(width, extra) -> None:
    """A search of 4 or 8 columns builds histograms row by row from a row-major copy of the
    bin codes: p N bytes more than a search of other widths."""
    n, p = 20_000, 6

    def search_bytes(search_width: int) -> float:
        cost = tree_stages_cost(
            n, p, 30, n_trees=10, leaves=16, histogram=True, presorted=False,
            features_tried=p, search_width=search_width, n_fit=n,
        )  # fmt: skip
        return cost.work_bytes

    assert search_bytes(width) - search_bytes(13) == extra * p * n


def test_kernel_ridge_costs_each_kind_of_work_at_its_own_rate() -> None:
    from okcore.kernel_models import cost as krr_cost
    from okcore.kernel_models.ard import ARD_MAX_ITER, ARD_ROWS

    rates = np.array(
        [krr_cost.RIDGE_KERNEL_SECONDS, krr_cost.RIDGE_FACTOR_SECONDS, krr_cost.ARD_FLOP_SECONDS]
    )
    for gamma, n in (("cv", 800), ("ard", 800), ("ard", 5000), (1.0, 800)):
        model = okcore.KernelRidgeRegressor(gamma=gamma)
        fit = model.estimate_cost(n, 6, n_outputs=3)
        searches = gamma == "cv"
        work = np.array(
            krr_cost.ridge_work(
                n, 6, 3, n_components=None, n_folds=model.cv, precomputed=False,
                n_widths=5 if searches else 1, ard_rows=ARD_ROWS if gamma == "ard" else 0,
            )
        )  # fmt: skip
        assert fit.stage_seconds == pytest.approx(float(work @ rates))
        assert model.estimate_work(n, 6, 3) == tuple(work)  # what bench/krr_cost.py fits
    # the widths' likelihood: ARD_MAX_ITER evaluations on at most ARD_ROWS rows, whatever N
    small = krr_cost.ridge_work(1000, 6, 3, n_components=None, n_folds=3, precomputed=False)
    ard = krr_cost.ridge_work(
        1000, 6, 3, n_components=None, n_folds=3, precomputed=False, ard_rows=ARD_ROWS
    )
    big = krr_cost.ridge_work(
        9000, 6, 3, n_components=None, n_folds=3, precomputed=False, ard_rows=ARD_ROWS
    )
    assert small[2] == 0 and ard[:2] == small[:2]
    a = float(ARD_ROWS)
    assert ard[2] == big[2] == pytest.approx(ARD_MAX_ITER * (4 / 3 * a**3 + a * a * (18 + 6)))
    # Nystrom: linear in N at fixed D; exact: cubic
    ny = [
        krr_cost.ridge_work(n, 6, 3, n_components=500, n_folds=0, precomputed=False)
        for n in (4000, 8000)
    ]
    assert ny[1][0] == pytest.approx(2 * ny[0][0])
    exact = [
        krr_cost.ridge_work(n, 6, 3, n_components=None, n_folds=0, precomputed=False)
        for n in (1000, 2000)
    ]
    assert exact[1][1] == pytest.approx(8 * exact[0][1])
