"""Small hand-built records for unit tests."""

from agents.evaluation.datasets import DialogueCase
from agents.evidence.passages import assemble_evidence
from agents.model.backend import Prompt
from schemas import (
    Citation,
    Claim,
    ClaimSet,
    ClaimVerdict,
    Correction,
    ErrorFix,
    FinGrActScore,
    JustificationRound,
    Label,
    LabelScores,
    Passage,
    Role,
    Turn,
    TurnVerdict,
)

UNIFORM = LabelScores(true=1 / 3, false=1 / 3, unverifiable=1 / 3)


def passage(text: str, pid: str = "p1", date: str | None = "2023-05-01", url: str = "https://example.org/a") -> Passage:
    return Passage(passage_id=pid, text=text, url=url, title="t", published_at=date, retrieved_at="2026-12-03",
                   retriever="test")


def claimset(*claims: str, turn_text: str | None = None) -> ClaimSet:
    return ClaimSet(
        claimset_id="cs-1", conversation_id="c1", turn_id="t1", bot="bot", turn_text=turn_text or " ".join(claims),
        turn_timestamp=0.0, claim_date=None, context=(),
        claims=tuple(Claim(claim_id=f"claim-{i}", index=i, text=t) for i, t in enumerate(claims)), skipped=(),
    )


def claim_verdict(index: int, text: str, label: Label, cited: tuple[str, ...] = ("p1",)) -> ClaimVerdict:
    return ClaimVerdict(claim_id=f"claim-{index}", claim_index=index, claim_text=text, label=label, confidence=0.9,
                        model_scores=UNIFORM, scores=UNIFORM, justification="because", signals=(),
                        cited_passages=cited)


def sample_turn_verdict() -> TurnVerdict:
    evidence = assemble_evidence(
        claimset("The tower is in Berlin.", "It opened in 1889."), [passage("The tower is in Paris. It opened in 1889.")]
    )
    return TurnVerdict(
        verdict_id="v1", evidence=evidence, label=Label.FALSE,
        claim_verdicts=(claim_verdict(0, "The tower is in Berlin.", Label.FALSE),
                        claim_verdict(1, "It opened in 1889.", Label.TRUE)),
    )


def sample_correction() -> Correction:
    score = FinGrActScore(error_detection=2, correction=2, links=3, total=7, acceptable=True)
    fix = ErrorFix(claim_id="claim-0", claim_text="The tower is in Berlin.", label=Label.FALSE,
                   correction="The tower is in Paris.",
                   citations=(Citation(passage_id="p1", url="https://example.org/a", title="t", published_at="2023-05-01"),))
    return Correction(correction_id="corr-1", conversation_id="c1", turn_id="t1", bot="bot", label=Label.FALSE,
                      original_text="The tower is in Berlin.", corrected_text="The tower is in Paris.",
                      justification="False: ...", errors=(fix,), score=score,
                      rounds=(JustificationRound(round=0, justification="j", corrected_text="c", score=score, feedback=""),))


def dialogue(case_id: str, *assistant: str, hallucination: bool = False) -> DialogueCase:
    """A DiaHalu-shaped dialogue: "Tell me more." (turn A<i>) before each assistant turn (B<i>)."""
    turns = []
    for i, text in enumerate(assistant):
        turns += [Turn(conversation_id=case_id, turn_id=f"A{i}", role=Role.USER, text="Tell me more."),
                  Turn(conversation_id=case_id, turn_id=f"B{i}", role=Role.ASSISTANT, text=text)]
    return DialogueCase(case_id=case_id, turns=tuple(turns), hallucination=hallucination, hallucinated_turns=())


def reply_as_claim(prompt: Prompt) -> str:
    """A scripted segment answer: the reply in the prompt is one claim, its own text."""
    return '{"claims":["%s"]}' % prompt.variable.rsplit("Reply: ", 1)[1].strip()
