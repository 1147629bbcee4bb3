"""The sufficiency rater: fitted on labelled rows, read from its file, applied by the sufficiency stage."""

from pathlib import Path

import orjson
import pytest

from agents.errors import InputError
from agents.evidence.passages import assemble_evidence
from agents.scoring.sufficiency import FEATURES, SufficiencyRater, fit_rater
from agents.stages.sufficiency import assess_sufficiency
from schemas import EvidenceFit, Sufficiency
from tests.support.records import claimset, passage

NO_MARGIN = EvidenceFit(mean_logprob=-1.0, min_logprob=-1.0, contradiction=0.0, weakest="")


def test_a_fit_on_few_unsettled_rows_still_calls_them_insufficient() -> None:
    # 40 claims whose evidence shares most of their words and settled them, 4 whose evidence is about
    # something else: the rare class weighs as much as the common one.
    settled = [((0.8 + i / 200, 0.9, 1.0, 1.0, 0.7), True) for i in range(40)]
    unsettled = [((0.1 + i / 100, 0.2, 0.0, 0.0, 0.7), False) for i in range(4)]
    rater = fit_rater(settled + unsettled, "test rows")
    assert rater.probability((0.85, 0.9, 1.0, 1.0, 0.7)) > 0.5 > rater.probability((0.1, 0.2, 0.0, 0.0, 0.7))
    with pytest.raises(InputError, match="rows of both classes"):
        fit_rater(settled, "one class")


def test_the_rater_file_round_trips_and_a_wrong_one_says_how_to_fix_it(tmp_path: Path) -> None:
    rater = SufficiencyRater(weights=(1.0, 2.0, 0.1, 0.1, -1.0), bias=0.5, source="test")
    rater.save(tmp_path / "rater.json")
    assert SufficiencyRater.load(tmp_path / "rater.json") == rater
    other = orjson.loads((tmp_path / "rater.json").read_bytes()) | {"features": ["overlap"]}
    (tmp_path / "other.json").write_bytes(orjson.dumps(other))
    with pytest.raises(InputError, match="train-verifier --sufficiency-out"):
        SufficiencyRater.load(tmp_path / "other.json")
    with pytest.raises(InputError, match="HALLUWATCH_SUFFICIENCY_RATER"):
        SufficiencyRater.load(tmp_path / "missing.json")
    assert len(SufficiencyRater.load().weights) == len(FEATURES)  # the shipped one reads


def test_the_stage_calls_evidence_on_the_claim_sufficient_and_evidence_on_something_else_not() -> None:
    rater = SufficiencyRater.load()
    claims = claimset("The Danube flows into the Black Sea.")
    on_topic = assemble_evidence(claims, [passage("The Danube flows through Vienna and into the Black Sea.")])
    off_topic = assemble_evidence(claims, [passage("Mount Fuji is the highest mountain in Japan.")])
    (on,), timing = assess_sufficiency(on_topic, [NO_MARGIN], rater)
    (off,), _ = assess_sufficiency(off_topic, [NO_MARGIN], rater)
    assert on.label is Sufficiency.SUFFICIENT and off.label is Sufficiency.INSUFFICIENT
    assert "the closest passage holds 100% of the claim's words" in on.reason
    assert timing.stage == "sufficiency" and timing.model_seconds == 0
    (none,), _ = assess_sufficiency(assemble_evidence(claims, []), [NO_MARGIN], rater)
    assert (none.label, none.probability, none.reason) == (Sufficiency.INSUFFICIENT, 0.0, "no evidence")
