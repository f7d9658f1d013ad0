"""Early stopping is a round callback (as LightGBM's ``early_stopping``) that the stage
loops of both boosting families hear with every other callback."""

import numpy as np
from okdata import make_regression

import okcore
from okcore.callbacks import EarlyStopping, RoundMonitor


def progress(m: int, val_loss: float | None) -> okcore.FitProgress:
    return okcore.FitProgress(done=m + 1, total=10, elapsed=0.0, val_loss=val_loss)


def test_early_stopping_keeps_the_best_round_and_stops_after_its_patience() -> None:
    stop = EarlyStopping(n_iter_no_change=2, tol=0.1)
    losses = [5.0, 4.0, 3.95, 3.0, 3.5, 3.05]
    heard = [stop(progress(m, v)) for m, v in enumerate(losses)]
    # 3.95 is not better than 4.0 by tol; 3.0 is; 3.5 and 3.05 are not: stop at round 5
    assert heard == [False, False, False, False, False, True]
    assert stop.best_iteration == 3 and stop.best_loss == 3.0
    assert not stop(progress(6, None))  # rounds without a validation loss are ignored


def test_the_monitor_reports_who_stopped() -> None:
    user_stops = RoundMonitor(10, lambda p: p.done == 2, EarlyStopping(5))
    assert not user_stops.end_round(0, 1.0, 1.0)
    assert user_stops.end_round(1, 1.0, 1.0) and user_stops.stopped
    early_stops = RoundMonitor(10, None, EarlyStopping(1))
    assert not early_stops.end_round(0, 1.0, 1.0) and early_stops.improved
    assert early_stops.end_round(1, 1.0, 2.0) and not early_stops.stopped
    assert early_stops.best_round(2) == 0 and RoundMonitor(10, None).best_round(4) == 3


def test_an_early_stopping_callback_given_by_the_user_stops_a_fit() -> None:
    """The same object works as a user's fit callback: it then stops the fit like any
    callback (the trees so far are kept)."""
    X, Y = make_regression(n=60)
    X_val, Y_val = make_regression(n=20, seed=1)
    stop = EarlyStopping(n_iter_no_change=1, tol=np.inf)  # no round improves by inf: stop at 1
    est = okcore.OKBoostRegressor(n_estimators=30, max_splits=3).fit(
        X, Y, eval_set=(X_val, Y_val), callback=stop
    )
    assert est.stopped_by_callback_ and est.n_estimators_ == 1


def test_kernel_ridge_reports_the_start_of_its_round_after_the_output_space() -> None:
    """Kernel ridge's width and penalty search and its solve are its one round: the callback
    hears the round start (done 0) once the output space is built, so that work is not
    heard as part of factorising the output kernel; both round reports share one clock."""
    X, Y = make_regression(n=40)
    heard: list[okcore.FitProgress] = []
    for gamma in ("cv", "ard"):
        heard.clear()
        okcore.KernelRidgeRegressor(gamma=gamma, random_state=0).fit(X, Y, callback=heard.append)
        assert [(p.phase, p.done, p.total) for p in heard] == [
            ("output_space", 0, 1),
            ("trees", 0, 1),
            ("trees", 1, 1),
        ]
        assert 0.0 < heard[1].elapsed <= heard[2].elapsed
