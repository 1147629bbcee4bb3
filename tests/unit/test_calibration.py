import numpy as np
import pytest

from agents.calibration import DEFAULT_PATH, FEATURE_NAMES, VerifyCalibration, cross_validated_fit, fit
from agents.errors import InputError
from schemas import Label


def synthetic(n: int = 300, seed: int = 1) -> tuple[list[list[float]], list[Label]]:
    """Labels decided by known features: name conflict -> false, high overlap -> true, else unverifiable."""
    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for _ in range(n):
        row = list(rng.dirichlet([1, 1, 1])) + [0.0] * (len(FEATURE_NAMES) - 3)
        kind = rng.integers(3)
        if kind == 0:
            row[FEATURE_NAMES.index("name_conflict")] = 1.0
            row[FEATURE_NAMES.index("best_passage_overlap")] = rng.uniform(0.3, 0.8)
            labels.append(Label.FALSE)
        elif kind == 1:
            row[FEATURE_NAMES.index("best_passage_overlap")] = rng.uniform(0.8, 1.0)
            labels.append(Label.TRUE)
        else:
            row[FEATURE_NAMES.index("best_passage_overlap")] = rng.uniform(0.0, 0.2)
            labels.append(Label.UNVERIFIABLE)
        rows.append(row)
    return rows, labels


def test_fit_recovers_a_known_rule() -> None:
    rows, labels = synthetic()
    calibration = fit(rows, labels)
    test_rows, test_labels = synthetic(seed=2)
    predicted = [calibration.combine(r).best() for r in test_rows]
    accuracy = np.mean([p == g for p, g in zip(predicted, test_labels)])
    assert accuracy > 0.95


def test_cross_validation_picks_a_regularisation_and_says_which() -> None:
    rows, labels = synthetic(150)
    calibration = cross_validated_fit(rows, labels, source="synthetic", folds=3, grid=(0.01, 5.0))
    # Heavy regularisation flattens the rule away; the cross-validated choice keeps it.
    assert "L2 0.01 chosen by 3-fold cross-validation" in calibration.source
    test_rows, test_labels = synthetic(seed=2)
    assert np.mean([calibration.combine(r).best() == g for r, g in zip(test_rows, test_labels)]) > 0.9


def test_identity_keeps_the_model_ranking() -> None:
    features = [0.2, 0.7, 0.1] + [1.0] * (len(FEATURE_NAMES) - 3)
    scores = VerifyCalibration.identity().combine(features)
    assert scores.best() is Label.FALSE
    assert scores.false > scores.true > scores.unverifiable


def test_save_load_round_trip(tmp_path) -> None:
    rows, labels = synthetic(60)
    calibration = fit(rows, labels, steps=50, source="test")
    path = tmp_path / "cal.json"
    calibration.save(path)
    assert VerifyCalibration.load(path) == calibration


def test_one_class_cannot_be_fitted() -> None:
    rows, _ = synthetic(10)
    with pytest.raises(InputError, match="two different labels"):
        fit(rows, [Label.TRUE] * 10)


def test_shipped_calibration_loads() -> None:
    assert len(VerifyCalibration.load(DEFAULT_PATH).weights) == 3


def test_unreadable_calibration_names_the_setting(tmp_path) -> None:
    bad = tmp_path / "cal.json"
    bad.write_text("{")
    with pytest.raises(InputError, match="HALLUWATCH_CALIBRATION"):
        VerifyCalibration.load(bad)
