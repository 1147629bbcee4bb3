"""Stage 1, segment: all atomic, self-contained claims of an assistant turn.

Cheap rules first: sentences that are questions, greetings, opinions, hedges
or instructions to the reader make no checkable claim and are recorded as
skipped with the reason, without a model call; what a question takes as
given ("Did you know that the tower opened in 1925?") is checked as a
sentence of its own, and a sentence about a "he" or "she" the conversation
never names is skipped too. A reply that is only a short
answer to the user's question becomes one claim together with the question,
also without a model call. Otherwise the model splits the remaining
sentences into atomic claims. A proposed claim that is a question, repeats
the user's words, or whose words, numbers or names are not in the turn or
its context is skipped with the reason (the segmenter must not invent facts to check), and so
is one the evidence cross-encoder reads as saying the opposite of the turn
(:mod:`agents.stages.faithfulness`); a factual sentence the model returns no
grounded claim for is checked whole rather than silently ignored. Then the rules of
:mod:`agents.stages.standalone` resolve leading pronouns and drop
near-duplicates. Last, a claim that says an earlier one again in other words
is marked as its restatement (:mod:`agents.stages.restatements`): both are
judged, and reports name them once.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.evidence.passages import day_of, grounding_passages
from agents.model.judge import JudgeRunner
from agents.model.nli import NliRunner
from agents.model.prompting import PromptTemplate
from agents.model.runner import ModelRunner
from agents.model.timing import StageClock
from agents.parsing import SentenceParser
from agents.stages.conversation_memory import REMEMBERED_TURNS, add_people, people_before
from agents.stages.faithfulness import contradicting_claims
from agents.stages.instructions import is_instruction, split_at_instruction
from agents.stages.restatements import judge_links, restatement_links
from agents.stages.standalone import (
    drop_duplicates,
    is_bare_answer,
    is_user_text,
    names_nobody,
    resolve_pronoun,
    with_question,
)
from agents.text import (
    content_words,
    coverage,
    curly_quotes,
    last_question,
    names_in,
    numbers,
    same_number,
    sentences,
    straight_quotes,
    truncate,
    value_names,
)
from schemas import Claim, ClaimSet, ContextLine, SkippedSpan, SkipReason, StageTiming, Turn, ids
from schemas.records import MAX_CLAIMS

_GREETING = re.compile(
    r"^(hi|hello|hey|good (morning|afternoon|evening)|thanks?( you)?|thank you|you're welcome|"
    r"bye|goodbye|see you|nice to meet you|glad to help|happy to help|sure|of course|okay|ok|great|you are welcome|"
    r"have a (nice|great|good|wonderful|lovely|safe)|enjoy|good luck|take care|cheers|good day)\b",
    re.IGNORECASE,
)
# A sentence that is only assent, acknowledgement or a one-word verdict ("Absolutely!", "Noted.", "Perfect!",
# "Good idea.") answers the other's words and says nothing to look up; the fact, if any, follows it. A bare
# "Yes." or "No." is left out: after a question it is the answer, checked together with the question.
_REACTION = re.compile(
    r"^(absolutely|certainly|definitely|indeed|exactly|agreed|i agree|noted|understood|got it|no problem|"
    r"not a problem|no worries|alright|perfect|wonderful|interesting|nice|excellent|awesome|lovely|fantastic|"
    r"amazing|cool|(good|great|tough|smart|wise|wonderful|excellent|nice) (choice|idea|pick|call|one))[.!]*$",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"^(i'?m not (sure|certain)|i am not (sure|certain)|i (don'?t|do not) (know|remember|recall)|not sure|"
    r"i (can'?t|cannot) (say|tell|remember)|maybe|perhaps|possibly|i'?m afraid i|i wonder|"
    # Speculation about what was just said: "That would revolutionize ...", "It could be luck", "They might
    # consider it". (A name with a modal, "Paris could host ...", stays a claim; so does "he would": it is
    # also the past of a habit.) "It must have been a sight" guesses at the past; "It must be filed" is a rule.
    r"(it|that|this|they) (could|might|may|must have)|(that|this) would|"
    # A guess at whether something holds, not a statement that it does: "It's possible, especially in
    # battle.", "It's likely that they met." ("It's possible to climb it without oxygen" states a fact.)
    r"(it|that|this)('s| is) (quite |very |entirely |highly |more than )?(possible|likely|unlikely|probable)"
    r"(?!\s+(to|for)\b))",
    re.IGNORECASE,
)
# "so", "really" ...: a word that only strengthens the one after it ("That's so cool!").
_INTENSIFIER = r"(so |really |very |quite |truly |pretty )?"
_OPINION = re.compile(
    r"^(i (think|believe|feel|love|like|hate|prefer|hope|guess|recommend|suggest|would)|in my (opinion|view)|"
    r"personally|i'd|i'm (sure|glad|happy|sorry)|it'?s? (great|nice|wonderful|amazing|fun|a pity|a shame|too bad)|"
    r"(that|this)('s| is| was| sounds) (great|nice|wonderful|amazing|fun|interesting|a pity|a shame|too bad)|"
    r"let me know|feel free|"
    # A reaction to what was just said: "That sounds like fun.", "That makes sense.", "That's fascinating!"
    r"(that|this) (sounds|seems|looks|feels|makes sense)|"
    # Praise for what was asked or said: "Good question!", "Interesting point."
    r"(a )?(good|great|excellent|interesting|fair|valid) (question|point)s?[.!]*$|"
    r"(that|this)('s| is| was| must be| must have been) " + _INTENSIFIER + r"[a-z]+[.!]*$|"
    # ... and "It's fascinating!" (the exclamation tells it from a fact about a thing: "It's closed.")
    r"it('s| is| was) " + _INTENSIFIER + r"[a-z]+!+$|"
    # A verdict on what was just said: "That's a common misconception.", "That was an adventure!" ("that"
    # points at the other's words, so there is nothing to look up).
    r"(that|this)('s| is| was) (quite |such |really |truly )?(a|an) |"
    # A likeness, not a fact: "It's like a shortcut through ...", "It's like we were each other's teachers".
    r"(it|that|this)('s| is| was) (just |kind of |sort of |a bit )?like\b)",
    re.IGNORECASE,
)
# A word of assent or surprise before a comma ("Indeed, it's a pity", "Sure, Paris is the capital") says
# nothing itself: the rules read what follows it.
_DISCOURSE_MARKER = re.compile(
    r"^(indeed|well|oh|ah|yes|yeah|no|sure|absolutely|actually|honestly|of course|wow|alright|okay|ok|hmm|so|"
    r"definitely|certainly|exactly|totally|surely|right|true|interestingly|unfortunately|fortunately|sadly|"
    r"luckily)\s*,\s*",
    re.IGNORECASE,
)
# A tag that turns a statement into a question: "It's great, don't you think?", "..., isn't it?"
_TAG_QUESTION = re.compile(r",\s*(?:don't|doesn't|isn't|aren't|wasn't|didn't|won't|can't|right|no)\b[^,?]*\?$", re.IGNORECASE)
# A typographic quote the model took for the end of its JSON string, then the array's close: it meant to stop
# there, and the grammar made it go on writing (control tokens, more JSON) until the string ran out.
_RUNAWAY = re.compile(r"\u201d\s*[\]}].*$", re.DOTALL)
# The tiny models ramble; context beyond a few recent turns rarely resolves a reference.
CONTEXT_TURNS = 4
CONTEXT_CHARS = 400
# Long turns are segmented a few sentences at a time so every call fits the context window.
CHUNK_CHARS = 1_200
# The longest answer the grammar allows (8 claims of 160 characters) at two characters per token, which
# English text beats; not the full one-token-per-character budget (agents/model/budget.py), because a
# segment model that rambles through 8 claims costs half a minute and _RUNAWAY cuts such text anyway.
MAX_TOKENS = 8 * 160 // 2 + 32


@dataclass(frozen=True)
class SegmentOutput:
    # Bounded so the grammar always closes the JSON within max_tokens, however the model rambles.
    claims: tuple[str, ...] = field(metadata={"max_items": 8, "item_max_length": 160})


def classify_sentence(sentence: str) -> SkipReason | None:
    """Why a sentence makes no checkable claim, or None when it might."""
    whole = sentence.strip()
    stripped = _DISCOURSE_MARKER.sub("", whole) or whole
    if stripped.endswith("?"):
        return SkipReason.QUESTION
    if is_instruction(stripped):
        return SkipReason.INSTRUCTION
    if _GREETING.match(whole) and len(content_words(whole)) <= 4:
        return SkipReason.GREETING  # "Sure, I can help you with that." is a greeting, marker and all
    if _OPINION.match(stripped):
        return SkipReason.OPINION
    if _HEDGE.match(stripped):
        return SkipReason.HEDGE
    if not content_words(stripped) or _REACTION.match(stripped):
        return SkipReason.NO_FACT
    return None


def is_reaction(sentence: str) -> bool:
    """Assent or a one-word verdict alone ("Certainly!", "Yes, exactly.", "Good idea."): see _REACTION."""
    whole = sentence.strip()
    return _REACTION.match(_DISCOURSE_MARKER.sub("", whole) or whole) is not None


def is_grounded(claim: str, turn_text: str, context_text: str) -> bool:
    """A claim must come from the turn: most of its words appear in the turn or context, some in the turn,
    and every number and name in it appears there too (see :func:`invented_values`)."""
    claim_words = content_words(claim)
    turn_words = content_words(turn_text)
    if not claim_words & turn_words:
        return False
    if coverage(claim_words, turn_words | content_words(context_text)) < 0.75:
        return False
    return not invented_values(claim, f"{turn_text}\n{context_text}")


def invented_values(claim: str, said: str) -> list[str]:
    """The numbers and names of ``claim`` that nothing in ``said`` (the turn and its context) has.

    Numbers and names are what a check compares with the evidence, so a claim must take them from the
    turn. The segment model also knows things: asked to split "The bridge opened in 1952." it may write
    "The bridge opened in 1937.", the year it remembers, and given "born first" it adds a year of birth.
    Such a claim keeps most of the turn's words, so word coverage alone lets it through, and it is then
    checked as if the bot had said it: a lie corrected before anyone looks, or an alert on words nobody
    wrote."""
    said_numbers = numbers(said)
    new_numbers = [n for n in sorted(numbers(claim)) if not any(same_number(n, m) for m in said_numbers)]
    return new_numbers + [name for name in sorted(value_names(claim)) if not names_in(said, name)]


def chunk_sentences(items: Sequence[str], limit: int) -> list[str]:
    """Join consecutive sentences into chunks of at most ``limit`` characters (a longer sentence is cut)."""
    chunks: list[str] = []
    current = ""
    for sentence in items:
        sentence = truncate(sentence, limit)
        if current and len(current) + 1 + len(sentence) > limit:
            chunks.append(current)
            current = ""
        current = f"{current} {sentence}".strip()
    if current:
        chunks.append(current)
    return chunks


def render_context(context: Sequence[ContextLine]) -> str:
    lines = [f"{c.role.value}: {truncate(c.text, CONTEXT_CHARS)}" for c in context[-CONTEXT_TURNS:]]
    return "\n".join(lines) if lines else "(start of conversation)"


async def segment(
    turn: Turn,
    context: Sequence[ContextLine],
    model: ModelRunner,
    prompt: PromptTemplate,
    parser: SentenceParser,
    nli: NliRunner,
    people: Sequence[str] = (),
    judge: JudgeRunner | None = None,
) -> ClaimSet:
    """The claims of ``turn``. ``context``: the conversation before it, as far as the caller has it; the
    last :data:`REMEMBERED_TURNS` lines are read whole, older ones only for the people they name.
    ``nli``: the evidence cross-encoder, which tells a proposed claim that contradicts the turn.
    ``people``: people named before ``context`` begins, most recent last (a worker's
    :class:`~agents.stages.conversation_memory.ConversationMemory` keeps them).
    ``judge``: the optional judge, which also reads possible restatements the cross-encoder left apart."""
    clock = StageClock("segment")
    skipped: list[SkippedSpan] = []
    parts = [part for whole in sentences(turn.text) for part in split_at_instruction(whole)]
    reasons = [classify_sentence(sentence) for sentence in parts]
    skipped += [SkippedSpan(text=sentence, reason=r) for sentence, r in zip(parts, reasons) if r is not None]
    # Parsing is CPU work (milliseconds a sentence): off the loop.
    memory = await asyncio.to_thread(remembered_people, context, people, parser)
    factual, given = await asyncio.to_thread(
        checkable_sentences, parts, reasons, context_texts(context), memory, parser, skipped
    )

    question = last_question(context)
    stated = [sentence for sentence in factual if sentence not in given]
    if stated and question is not None and is_bare_answer(" ".join(stated), question):
        asked = classify_sentence(_TAG_QUESTION.sub("", question).rstrip("?") + ".")
        if asked in (SkipReason.OPINION, SkipReason.HEDGE):
            # "It's great, don't you think?" "Absolutely!": agreeing with an opinion states no fact.
            skipped += [SkippedSpan(text=sentence, reason=asked) for sentence in stated]
            return claimset_for(turn, context, given, skipped, (clock.stop(),))
        # A bare answer says nothing on its own; with its question it is one checkable claim (no model call).
        claims = [with_question(question, " ".join(stated)), *given]
        return claimset_for(turn, context, claims, skipped, (clock.stop(),))

    claim_texts: list[str] = []
    seen: set[str] = set()
    context_text = render_context(context)
    for chunk in chunk_sentences(factual, CHUNK_CHARS):
        # The model copies the turn's words into JSON strings, where a straight quote it copies ends the claim
        # ("Kim starred in " for 'Kim starred in "The Map"'): it is shown typographic quotes instead, and its
        # claims get straight ones back, so they read like the turn.
        shown = prompt.render(context=curly_quotes(context_text), text=curly_quotes(chunk))
        generation = await model.generate(shown, SegmentOutput, max_tokens=MAX_TOKENS)
        clock.add(generation)
        for proposed in generation.output.claims:
            text = checkable_part(" ".join(straight_quotes(_RUNAWAY.sub("", proposed)).split()), skipped)
            if not text or text.lower() in seen:
                continue
            seen.add(text.lower())
            if is_user_text(text, turn.text, context):
                skipped.append(SkippedSpan(text=text, reason=SkipReason.USER_TEXT))
            elif is_grounded(text, turn.text, context_text):
                claim_texts.append(text)
            else:
                skipped.append(SkippedSpan(text=text, reason=SkipReason.UNGROUNDED))
    reading = time.perf_counter()
    contradicting = await contradicting_claims(claim_texts, turn.text, context, nli)
    clock.encoder_seconds = time.perf_counter() - reading
    skipped += [SkippedSpan(text=text, reason=SkipReason.CONTRADICTS_TURN) for text in contradicting]
    claim_texts = [text for text in claim_texts if text not in contradicting]
    # A factual sentence whose words mostly made it into no claim is checked whole.
    covered = content_words(" ".join(claim_texts))
    for sentence in factual:
        if coverage(content_words(sentence), covered) < 0.5:
            claim_texts.append(sentence)
    # A word of assent before a claim says nothing to check, and hides a pronoun from the rules that resolve it:
    # "Yes, his discoveries changed medicine." is checked as "<who> discoveries changed medicine.".
    claim_texts = [without_discourse_marker(text) for text in claim_texts]
    # Parsing is CPU work (milliseconds a sentence, only for claims that open with a pronoun): off the loop.
    # The turn's own opinions may name what its facts are about: "I love soccer. It's my passion."
    said_first = [span.text for span in skipped if span.reason in (SkipReason.OPINION, SkipReason.HEDGE)]
    # ... and so may a question the turn opens with: "How about a canopy? It gives shade to cars."
    opening = itertools.takewhile(lambda part: part[1] is not None, zip(parts, reasons))
    said_first += [sentence for sentence, reason in opening if reason is SkipReason.QUESTION]
    claim_texts = await asyncio.to_thread(
        standalone_claims, claim_texts, [*context_texts(context), *said_first], parser, memory, skipped
    )
    reading = time.perf_counter()
    links = await restatement_links(claim_texts, nli)
    clock.encoder_seconds += time.perf_counter() - reading
    if judge is not None:
        asking = time.perf_counter()
        links = await judge_links(claim_texts, links, judge)
        clock.model_seconds += time.perf_counter() - asking  # as in the verify stage: the judge is a model
    return claimset_for(turn, context, claim_texts, skipped, (clock.stop(),), restates=links)


def checkable_part(claim: str, skipped: list[SkippedSpan]) -> str:
    """A proposed claim without the sentences the turn-level rules skip (recorded in ``skipped``): the model
    may join a reaction to a fact or reword an opinion ("That's great to hear. I am taking a year off."
    keeps only the second sentence). The rest stays one claim, so a sentence that leans on the one before
    it ("It opened in 1900.") keeps its subject."""
    kept = []
    for part in sentences(claim):
        reason = classify_sentence(part)
        # A piece without content words is a splitter's fragment ("No." | "1 on the Billboard Hot 100"): it
        # stays with its neighbours. Assent the model copied from the turn ("Certainly! The ferry ...") goes;
        # the turn's own sentence is already among the skipped.
        if reason is None or (reason is SkipReason.NO_FACT and not is_reaction(part)):
            kept.append(part)
        elif reason is not SkipReason.NO_FACT:
            skipped.append(SkippedSpan(text=part, reason=reason))
    return " ".join(kept)


def context_texts(context: Sequence[ContextLine]) -> list[str]:
    """The remembered turns' texts, where a leading pronoun may find its referent."""
    return [line.text for line in context[-REMEMBERED_TURNS:]]


def without_discourse_marker(claim: str) -> str:
    """"Yes, it opened in 1889." -> "It opened in 1889."."""
    rest = _DISCOURSE_MARKER.sub("", claim.strip())
    return rest[0].upper() + rest[1:] if rest else claim.strip()


def remembered_people(context: Sequence[ContextLine], people: Sequence[str], parser: SentenceParser) -> tuple[str, ...]:
    """The people named before the remembered window: ``people``, then those of the older ``context`` lines."""
    return add_people(people, people_before(context[:-REMEMBERED_TURNS], parser))


def checkable_sentences(
    parts: Sequence[str], reasons: Sequence[SkipReason | None], earlier: Sequence[str], known: Sequence[str],
    parser: SentenceParser, skipped: list[SkippedSpan],
) -> tuple[list[str], list[str]]:
    """The sentences of the turn (``parts``, each skipped for its ``reasons`` entry or None) worth checking, in
    order, and which of them a question of the turn takes as given.

    A question claims nothing itself, but what it presupposes is the bot's claim all the same: "Did you know
    that the tower opened in 1925?" says it opened then. Such a clause is checked like a sentence of its own.
    A sentence about "he" or "she" when neither the conversation (``earlier``, ``known``) nor the turn before
    it names anyone is recorded in ``skipped`` instead, before the model is asked to split it."""
    kept: list[str] = []
    given: list[str] = []
    for i, (sentence, reason) in enumerate(zip(parts, reasons)):
        if reason is None:
            found = [sentence]
        elif reason is SkipReason.QUESTION:
            found = [c for c in parser.presupposed(without_discourse_marker(sentence)) if classify_sentence(c) is None]
        else:
            continue
        for text in found:
            if names_nobody(without_discourse_marker(text), [*earlier, *parts[:i]], known, parser):
                skipped.append(SkippedSpan(text=text, reason=SkipReason.UNNAMED_PERSON))
                continue
            kept.append(text)
            if reason is SkipReason.QUESTION:
                given.append(text)
    return kept, given


def standalone_claims(
    claims: Sequence[str], earlier: Sequence[str], parser: SentenceParser, known: Sequence[str] = (),
    skipped: list[SkippedSpan] | None = None,
) -> list[str]:
    """Pronouns resolved from what came before (``earlier``: the dialogue's remembered turns, then the turn's
    skipped sentences; after them the turn's earlier claims; ``known``: people named before those turns),
    near-duplicates dropped. A claim about "he" or "she" with no one named to be them goes to ``skipped``."""
    resolved: list[str] = []
    for claim in claims:
        if names_nobody(claim, [*earlier, *resolved], known, parser):
            if skipped is not None:
                skipped.append(SkippedSpan(text=claim, reason=SkipReason.UNNAMED_PERSON))
            continue
        resolved.append(resolve_pronoun(claim, [*earlier, *resolved], parser, known))
    return drop_duplicates(resolved)


def claimset_for(
    turn: Turn,
    context: Sequence[ContextLine],
    claim_texts: Sequence[str],
    skipped: Sequence[SkippedSpan] = (),
    timings: tuple[StageTiming, ...] = (),
    id_suffix: str = "",
    restates: Sequence[int | None] = (),
) -> ClaimSet:
    """The claim set of a turn, with ids derived from (conversation, turn, claim index); ``restates``, when
    given, holds for each claim the index of the earlier claim it restates, or None."""
    claims = tuple(
        Claim(
            claim_id=ids.claim_id(turn.conversation_id, turn.turn_id, i, id_suffix),
            index=i,
            text=truncate(t, 1000),
            restates=restates[i] if restates else None,
        )
        for i, t in enumerate(claim_texts[:MAX_CLAIMS])
    )
    return ClaimSet(
        claimset_id=ids.claimset_id(turn.conversation_id, turn.turn_id, id_suffix),
        conversation_id=turn.conversation_id,
        turn_id=turn.turn_id,
        bot=turn.bot,
        turn_text=turn.text,
        turn_timestamp=turn.timestamp,
        claim_date=turn.claim_date,
        context=tuple(context[-CONTEXT_TURNS:]),
        claims=claims,
        skipped=tuple(skipped[:64]),
        timings=timings,
        grounding=grounding_passages(turn.grounding, day_of(turn.timestamp)),
    )
