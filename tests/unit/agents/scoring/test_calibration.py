from dataclasses import replace

import numpy as np
import orjson
import pytest

from agents.errors import InputError
from agents.model.judge import JUDGES
from agents.scoring.calibration import (
    DEFAULT_PATH,
    FEATURE_NAMES,
    JUDGE_FEATURE_NAMES,
    JUDGE_PATHS,
    VerifyCalibration,
    cross_validated_fit,
    fit,
)
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


def test_a_grounded_fit_is_saved_with_its_calibration_and_picked_for_grounded_evidence(tmp_path) -> None:
    rows, labels = synthetic(60)
    retrieved = fit(rows, labels, steps=50, source="retrieved")
    both = replace(retrieved, grounded=fit(rows, labels, steps=80, source="grounded"))
    path = tmp_path / "cal.json"
    both.save(path)
    loaded = VerifyCalibration.load(path)
    assert loaded == both
    assert loaded.for_evidence(grounded=True).source == "grounded"
    assert loaded.for_evidence(grounded=False).source == "retrieved"
    assert retrieved.for_evidence(grounded=True) is retrieved, "without a grounded fit, one fit serves all"


def test_a_fit_on_a_judges_letters_says_so_in_its_file_and_its_grounded_fit_does_not(tmp_path) -> None:
    rows, labels = synthetic(60)
    judged = [list(row) + [0.2, 0.5, 0.3] for row in rows]  # the judge's letters beside each passage come last
    both = replace(fit(judged, labels, steps=50, source="retrieved"), judge="qwen-1.5b",
                   grounded=fit(rows, labels, steps=80, source="grounded"),
                   closed_book=fit(rows, labels, steps=60, source="closed-book"))
    both.save(tmp_path / "cal.json")
    loaded = VerifyCalibration.load(tmp_path / "cal.json")
    assert loaded == both and loaded.judge == "qwen-1.5b"
    assert loaded.for_evidence(grounded=True).judge is None
    assert loaded.for_evidence(grounded=False, closed_book=True).source == "closed-book"
    assert loaded.for_evidence(grounded=False).source == "retrieved"
    # Without a closed-book fit, one fit decides claims with and without evidence (the default calibration).
    assert loaded.grounded.for_evidence(grounded=False, closed_book=True) == loaded.grounded
    assert loaded.feature_names == JUDGE_FEATURE_NAMES and loaded.grounded.feature_names == FEATURE_NAMES


def test_a_judges_fit_from_before_it_read_each_passage_is_refused_with_the_refit(tmp_path) -> None:
    rows, labels = synthetic(60)
    old = replace(fit(rows, labels, steps=50), judge="qwen-1.5b").to_dict()
    old["features"] = list(FEATURE_NAMES)  # as such files were written until session 33
    (tmp_path / "cal.json").write_bytes(orjson.dumps(old))
    with pytest.raises(InputError, match="train-verifier"):
        VerifyCalibration.load(tmp_path / "cal.json")


def test_every_judge_ships_a_calibration_fitted_on_its_own_letters() -> None:
    assert set(JUDGE_PATHS) == set(JUDGES)
    assert all(VerifyCalibration.load(path).judge == name for name, path in JUDGE_PATHS.items())
    assert all(VerifyCalibration.load(path).closed_book.judge is None for path in JUDGE_PATHS.values())


def test_the_shipped_calibration_has_a_fit_for_each_kind_of_evidence() -> None:
    shipped = VerifyCalibration.load(DEFAULT_PATH)
    assert shipped.grounded is not None and "halueval" in shipped.grounded.source
    assert "averitec" in shipped.source and "halueval" not in shipped.source


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


def test_value_swap_rule_is_measured_on_the_fitting_rows_and_only_raises_false(tmp_path) -> None:
    from agents.scoring.calibration import MIN_SWAP_ROWS, with_swap_rate
    from schemas import LabelScores

    column = FEATURE_NAMES.index("value_swap")
    rows, labels = synthetic()
    for i in range(16):  # 12 of 16 rows with a swap are false
        rows[i][column] = 0.7
        labels[i] = Label.FALSE if i < 12 else Label.TRUE
    calibration = with_swap_rate(fit(rows, labels), rows, labels)
    assert (calibration.swap_false_rate, calibration.swap_rows) == (0.75, 16)
    assert "0.75 of 16 fitting rows" in calibration.source
    raised = calibration.after_value_swap(LabelScores(true=0.6, false=0.3, unverifiable=0.1))
    assert raised.false == 0.75 and raised.true == pytest.approx(0.25 * 6 / 7) and raised.best() is Label.FALSE
    surer = LabelScores(true=0.05, false=0.9, unverifiable=0.05)
    assert calibration.after_value_swap(surer) == surer
    calibration.save(tmp_path / "c.json")
    assert VerifyCalibration.load(tmp_path / "c.json").swap_false_rate == 0.75
    # Too few rows, or rows that were mostly not false, measure nothing: the rule stays off.
    few = with_swap_rate(fit(rows, labels), rows[: MIN_SWAP_ROWS - 1] + rows[16:], labels[: MIN_SWAP_ROWS - 1] + labels[16:])
    assert few.swap_false_rate is None
    mostly_true = [Label.TRUE if i < 16 else label for i, label in enumerate(labels)]
    assert with_swap_rate(fit(rows, mostly_true), rows, mostly_true).swap_false_rate is None
    assert VerifyCalibration.identity().after_value_swap(raised) == raised
