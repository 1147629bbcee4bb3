"""Claims that say the opposite of the turn: the segment model's slips, dropped before anything is checked.

The 270M segment model rewrites as well as splits. Given "Lydia Davis was born first." it may answer
"Martin Heidegger was born first."; given "Yes, there are studies that show it works." it may answer
"There are no studies."; given "The line runs east." it may write "west". Such a claim keeps the turn's
words, names and numbers, so the word and value rules of the segment stage let it through, and the
verifier then judges a statement the bot never made: a right answer is flagged for the segmenter's
mistake, or a lie passes because the rewrite happens to be true.

The evidence cross-encoder (:mod:`agents.model.nli`) reads contradiction far above support. Each proposed
claim is read beside the turn, both ways round; a claim that reads as a contradiction both ways is read
again beside the user's last line and the turn, because a turn that says "Her prize came in 1911" names
its subject only through the question, and the claim "Marie Curie won her prize in 1911" then looks
like a different statement. Only a claim read as a contradiction in all four readings is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.model.nli import NliRunner, PairScores
from agents.text import last_user_line
from schemas import ContextLine

# The margin (contradiction logit minus the other) from which a reading counts as a contradiction: a softmax
# of 0.95 on that side. The encoder's probes put a plain contradiction near 4.6 and support near 0.3.
CONTRADICTION_MARGIN = 3.0


def reads_as_contradiction(scores: PairScores) -> bool:
    return min(scores.forward, scores.backward) >= CONTRADICTION_MARGIN


async def contradicting_claims(
    claims: Sequence[str], turn_text: str, context: Sequence[ContextLine], nli: NliRunner
) -> list[str]:
    """The ``claims`` the cross-encoder reads as saying the opposite of ``turn_text`` (in claim order)."""
    if not claims:
        return []
    # Most claims fail the first reading, so the other three are read only for those that pass it.
    first = await nli.forward(claims, [turn_text])
    suspects = [claim for claim, margin in zip(claims, first) if margin >= CONTRADICTION_MARGIN]
    if suspects:
        alone = await nli.score(suspects, [turn_text])
        suspects = [claim for claim, scores in zip(suspects, alone) if reads_as_contradiction(scores)]
    asked = last_user_line(context)
    if not suspects or not asked:
        return suspects
    with_question = await nli.score(suspects, [f"{asked} {turn_text}"])
    return [claim for claim, scores in zip(suspects, with_question) if reads_as_contradiction(scores)]
