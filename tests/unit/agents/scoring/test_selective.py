"""Selective verdicts: the regression, the curve and the threshold, on synthetic data with a known answer."""

import random
from pathlib import Path

import pytest

from agents.errors import InputError
from agents.scoring.selective import (
    FEATURES,
    SelectiveFit,
    SelectiveModel,
    SelectiveRow,
    area_under_curve,
    curve,
    fit_selective,
    plot_curves,
    summarize_selective,
)


def synthetic_rows(n: int = 1200, seed: int = 7) -> list[SelectiveRow]:
    """Verdicts are right with probability 0.15 + 0.8 * sufficiency; nothing else carries signal."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        sufficiency = rng.random()
        features = {name: rng.random() for name in FEATURES} | {"sufficiency": sufficiency}
        correct = rng.random() < 0.15 + 0.8 * sufficiency
        flagged = rng.random() < 0.5
        rows.append(SelectiveRow(features, correct, flagged, gold_false=flagged == correct, held_out=i % 2 == 1))
    return rows


def test_regression_finds_the_signal_and_the_sufficiency_curve_is_better() -> None:
    fit = fit_selective(synthetic_rows(), "synthetic", coverage=0.5)
    weights = dict(zip(fit.model.features, fit.model.weights))
    assert weights["sufficiency"] > 2.0
    assert all(abs(w) < 1.0 for name, w in weights.items() if name != "sufficiency")
    assert fit.auc > fit.auc_without_sufficiency + 0.05
    # Half the held-out rows are kept at the chosen threshold, and they are right more often than all rows.
    chosen = min(fit.model.curve, key=lambda p: abs(p.threshold - fit.model.threshold))
    assert abs(chosen.coverage - 0.5) < 0.03
    assert chosen.accuracy > fit.model.curve[-1].accuracy + 0.1


def test_curve_and_area_arithmetic() -> None:
    points = curve([0.9, 0.8, 0.8, 0.1], [True, True, False, False], [True, False, True, True], [True, False, False, True])
    assert [(p.coverage, p.accuracy) for p in points] == [(0.25, 1.0), (0.75, 2 / 3), (1.0, 0.5)]
    assert [p.alert_precision for p in points] == [1.0, 0.5, 2 / 3]
    assert area_under_curve(points) == pytest.approx(0.25 * 1.0 + 0.5 * 2 / 3 + 0.25 * 0.5)


def test_targets_pick_thresholds_from_the_held_out_curve(tmp_path: Path) -> None:
    fit = fit_selective(synthetic_rows(), "synthetic")
    wide = fit.model.with_target(coverage=0.9)
    narrow = fit.model.with_target(coverage=0.3)
    assert narrow.threshold > wide.threshold
    # Full coverage keeps every verdict, also one scoring below all held-out rows.
    assert fit.model.with_target(coverage=1.0).threshold == 0.0
    precise = fit.model.with_target(precision=0.6)
    point = min(precise.curve, key=lambda p: abs(p.threshold - precise.threshold))
    assert point.alert_precision >= 0.6
    with pytest.raises(InputError, match="lower the target"):
        fit.model.with_target(precision=1.01)
    # Saved and loaded, the file gives the same model; the plot is a PNG.
    fit.save(tmp_path / "selective.json")
    assert SelectiveFit.load(tmp_path / "selective.json") == fit
    plot_curves(fit, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_counts_coverage_and_alerts() -> None:
    model = SelectiveModel(features=("sufficiency",), weights=(10.0,), bias=-5.0, threshold=0.5)
    fit = SelectiveFit(model, model, 0.0, 0.0, 0, 0)
    rows = [
        SelectiveRow({"sufficiency": 0.9}, correct=True, flagged=True, gold_false=True, held_out=True),
        SelectiveRow({"sufficiency": 0.8}, correct=False, flagged=True, gold_false=False, held_out=True),
        SelectiveRow({"sufficiency": 0.1}, correct=False, flagged=False, gold_false=True, held_out=True),
    ]
    summary = summarize_selective(rows, fit)
    assert summary.coverage == pytest.approx(2 / 3)
    assert summary.selective_accuracy == 0.5
    assert summary.alert_precision == 0.5 and summary.alert_recall == 0.5


def test_too_few_rows_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="too few judged rows"):
        fit_selective(synthetic_rows(n=12), "tiny")


def test_a_labelled_replay_report_gives_one_row_per_conversation(tmp_path: Path) -> None:
    import orjson

    from agents.evaluation.replay_scoring import report_selective_rows
    from schemas import to_dict
    from tests.support.records import sample_turn_verdict

    verdict = to_dict(sample_turn_verdict())  # says false
    lines = [
        {"conversation_id": "c1", "verdict": verdict, "conversation_hallucination": True},
        {"conversation_id": "c2", "verdict": verdict, "conversation_hallucination": False},
        {"conversation_id": "c3", "verdict": None, "conversation_hallucination": False},  # never answered: no row
    ]
    report = tmp_path / "report.jsonl"
    report.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    rows = report_selective_rows(report)
    assert [(r.flagged, r.gold_false, r.correct, r.held_out) for r in rows] == [(True, True, True, False), (True, False, False, True)]
    assert rows[0].features["confidence"] == 0.9
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_bytes(orjson.dumps({"conversation_id": "c1", "verdict": verdict}) + b"\n")
    with pytest.raises(InputError, match="no conversation label"):
        report_selective_rows(unlabelled)
