"""Claims of one turn that say the same thing in other words: judged each, reported once.

The segment model sometimes writes one fact twice ("Snoring could cause sleep apnea." and "Snoring could
lead to sleep apnea."). The word rule of :mod:`agents.stages.standalone` drops twins that share nearly all
their words; these share too few. Dropping them on the cross-encoder's reading was measured and left out
(``docs/research/segmentation/``): a weak verifier sometimes calls one wording false and the other true,
so a dropped twin was sometimes the only wording that caught a lie. So both wordings are still judged, and
the later one records which claim it restates (:attr:`schemas.Claim.restates`); the correction and the
alert then name a group once, by its strictest verdict.

Two claims restate each other when the evidence cross-encoder reads each, after the other, in its
support band: a contradiction ("... a comedian." / "... a writer.") reads far above it, an unrelated or
only partly covered claim below it. The band was read off hand-labelled DiaHalu pairs and checked on
HaluEval's, where it took 4 of 4 restatements and none of 13 distinct pairs.

The band misses many restatements (DiaHalu: it took 6 of its 14 hand-read ones): the cross-encoder reads a
looser rewording ("a vibrant and cosmopolitan city" / "a modern and bustling city") outside it. With the optional
judge, a pair the cross-encoder left apart that shares its names, numbers and enough of its words
(:func:`shares_a_fact`) is also read by the judge, each claim beside the other; both readings above
JUDGE_RESTATEMENT_CUT make it a restatement. On the hand-read pairs that took 12 of DiaHalu's 14 restatements
and none of its 10 distinct pairs, and on HaluEval's (not looked at when choosing) 3 of 4 and 1 of 13
(docs/research/segmentation/README.md, session 33).
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.model.judge import JudgeRunner
from agents.model.nli import NliRunner
from agents.stages.standalone import stems
from agents.text import numbers, value_names
from schemas import Claim, ClaimVerdict

# Both margins (second logit minus first) of a restating pair lie in here: the encoder's probes put support
# near 0.3-0.6, a contradiction above 2 and an unrelated sentence below -1.
RESTATEMENT_BAND = (0.25, 0.8)


# Two claims with the very same names and numbers that share this much of their word stems may say one fact
# twice ("Snoring could cause sleep apnea" / "Snoring could lead to sleep apnea"); many do not ("X was a writer"
# / "X was a producer"). `halluwatch eval segmentation` counts such pairs left ungrouped.
RESTATEMENT_OVERLAP = 0.4
# The judge's probability of "supported", each claim read beside the other, both above this: one fact. Chosen
# on the hand-read DiaHalu pairs: just above every distinct pair's smaller reading (0.5455 at most). The gap is
# thin there (one restatement read 0.547), so take the cut as a rough line, not a measured boundary.
JUDGE_RESTATEMENT_CUT = 0.546


def shares_a_fact(a: str, b: str) -> bool:
    """Whether two claims may say one thing: the same names and numbers, and most of their word stems shared."""
    wa, wb = stems(a), stems(b)
    if not wa or not wb or numbers(a) != numbers(b) or value_names(a) != value_names(b):
        return False
    return len(wa & wb) / len(wa | wb) >= RESTATEMENT_OVERLAP


def in_band(margin: float) -> bool:
    low, high = RESTATEMENT_BAND
    return low <= margin <= high


async def restatement_links(claims: Sequence[str], nli: NliRunner) -> list[int | None]:
    """For each claim, the index of the earlier claim it restates (the first of its group), or None."""
    links: list[int | None] = [None] * len(claims)
    for first, text in enumerate(claims):
        if links[first] is not None:
            continue  # already a restatement: the group is named by its first claim
        later = [j for j in range(first + 1, len(claims)) if links[j] is None]
        if not later:
            break
        # Most pairs fall outside the band on the first reading; only those inside are read the other way.
        after = await nli.forward([claims[j] for j in later], [text])
        candidates = [j for j, margin in zip(later, after) if in_band(margin)]
        if not candidates:
            continue
        before = [(await nli.forward([text], [claims[j]]))[0] for j in candidates]
        for j, margin in zip(candidates, before):
            if in_band(margin):
                links[j] = first
    return links


async def judge_links(claims: Sequence[str], links: Sequence[int | None], judge: JudgeRunner) -> list[int | None]:
    """``links`` (:func:`restatement_links`) with the restatements the judge reads among the pairs still apart
    that :func:`shares_a_fact`.

    Only such pairs: each costs the judge two to four readings (over a second each on 2 cores), and the word
    rule finds about one in 30 turns of HaluEval and DiaHalu."""
    links = list(links)
    for first, text in enumerate(claims):
        if links[first] is not None:
            continue
        later = [j for j in range(first + 1, len(claims)) if links[j] is None and shares_a_fact(text, claims[j])]
        if not later:
            continue
        # As restatement_links: every later claim beside this one in one call, then the other way round only
        # for those read as supported.
        after = await judge.scores([claims[j] for j in later], [text])
        for j, reading in zip(later, after):
            if reading.together.true <= JUDGE_RESTATEMENT_CUT:
                continue
            (before,) = await judge.scores([text], [claims[j]])
            if before.together.true > JUDGE_RESTATEMENT_CUT:
                links[j] = first
    return links


def group_of(claim: Claim) -> int:
    return claim.index if claim.restates is None else claim.restates


def one_per_group(verdicts: Sequence[ClaimVerdict], claims: Sequence[Claim]) -> list[ClaimVerdict]:
    """``verdicts`` in order, without those whose group an earlier one of them already speaks for."""
    by_index = {claim.index: claim for claim in claims}
    seen: set[int] = set()
    kept: list[ClaimVerdict] = []
    for verdict in verdicts:
        claim = by_index.get(verdict.claim_index)
        group = verdict.claim_index if claim is None else group_of(claim)
        if group not in seen:
            seen.add(group)
            kept.append(verdict)
    return kept
