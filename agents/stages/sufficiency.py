"""Stage 4, sufficiency: is the evidence enough to judge each claim at all?

An autorater in the sense of the Sufficient Context paper: it does not say
whether a claim is right, only how likely the evidence is to settle it. The
probability comes from the fitted rater of :mod:`agents.scoring.sufficiency`
over signals the verify stage computes anyway (word overlap, the evidence
cross-encoder's margins), so the stage runs after the verify stage's model
call and costs no call of its own. A claim set without evidence is
insufficient by definition.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.model.timing import StageClock
from agents.scoring.signals import Signals, claim_signals
from agents.scoring.sufficiency import SufficiencyRater, rater_features
from schemas import Claim, ClaimSufficiency, Evidence, EvidenceFit, StageTiming, Sufficiency


def rater_inputs(evidence: Evidence, claim: Claim, fit: EvidenceFit) -> tuple[Signals, tuple[float, ...]]:
    """A claim's signals against its evidence and, from them and its evidence fit, the rater's features (the
    stage rates them; ``train-verifier`` fits the rater on them)."""
    signals = claim_signals(claim.text, evidence.passages, evidence.claimset.context)
    return signals, rater_features(signals, fit, evidence.passages)


def assess_sufficiency(
    evidence: Evidence, fits: Sequence[EvidenceFit], rater: SufficiencyRater
) -> tuple[tuple[ClaimSufficiency, ...], StageTiming]:
    """One :class:`ClaimSufficiency` per claim, in claim order, and the stage's timing. ``fits``: the verify
    stage's evidence fit of each claim (it carries the cross-encoder's margins)."""
    clock = StageClock("sufficiency")
    passages = evidence.passages
    results = []
    for claim, fit in zip(evidence.claimset.claims, fits):
        if not passages:
            results.append(ClaimSufficiency(claim_id=claim.claim_id, label=Sufficiency.INSUFFICIENT,
                                            probability=0.0, reason="no evidence"))
            continue
        signals, features = rater_inputs(evidence, claim, fit)
        probability = rater.probability(features)
        results.append(ClaimSufficiency(
            claim_id=claim.claim_id,
            label=Sufficiency.SUFFICIENT if probability >= 0.5 else Sufficiency.INSUFFICIENT,
            probability=round(probability, 6),
            reason=f"the closest passage holds {signals.values[0]:.0%} of the claim's words, all passages"
                   f" {signals.values[1]:.0%}; cross-encoder margins {fit.nli_forward:+.1f} / {fit.nli_backward:+.1f}",
        ))
    return tuple(results), clock.stop()
