import pytest

from agents.evaluation.metrics import classification_metrics, percentile


def test_metrics_on_a_known_confusion() -> None:
    gold = ["true", "true", "false", "false", "false", "unverifiable"]
    pred = ["true", "false", "false", "false", "true", "error"]
    m = classification_metrics(gold, pred, ["true", "false", "unverifiable"])
    assert m.accuracy == pytest.approx(3 / 6)
    assert m.confusion == ((1, 1, 0), (1, 2, 0), (0, 0, 0))  # the failed row predicts nothing
    assert m.per_class["true"].precision == pytest.approx(0.5)
    assert m.per_class["false"].recall == pytest.approx(2 / 3)
    assert m.per_class["unverifiable"].f1 == 0.0
    f1_false = 2 * (2 / 3) * (2 / 3) / (4 / 3)
    assert m.macro_f1 == pytest.approx((0.5 + f1_false + 0.0) / 3)


def test_percentile() -> None:
    assert percentile(list(range(101)), 0.95) == 95
    assert percentile([], 0.5) == 0.0
