import orjson
import pytest

from agents.model.backend import Prompt
from agents.model.budget import output_budget
from agents.stages.verify import VerifyOutput
from schemas.generate import schema_for, schema_with_items


def test_the_longest_answer_the_grammar_allows_fits_at_one_token_per_character() -> None:
    # The answer that cut a row: an explanation of digits (one token each), as long as the grammar lets it be.
    schema = schema_with_items(VerifyOutput, "verdicts", 2)
    longest = {"verdicts": [{"label": "unverifiable", "why": "154. 4820. " * 10 + "1" * 10}] * 2}
    assert len(longest["verdicts"][0]["why"]) == 120  # the schema's maxLength
    assert len(orjson.dumps(longest)) <= output_budget(schema)
    # More claims, more room: one verdict's worth per claim.
    assert output_budget(schema_with_items(VerifyOutput, "verdicts", 3)) - output_budget(schema) >= 120


def test_an_unbounded_answer_has_no_budget() -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    with pytest.raises(ValueError, match="maxLength"):
        output_budget(schema)
    with pytest.raises(ValueError, match="maxItems"):
        output_budget({"type": "array", "items": {"type": "integer"}})


async def test_the_runner_gives_the_model_the_schemas_budget_unless_told(scripted) -> None:
    seen: list[int] = []
    runner, backend = scripted({"verify": '{"verdicts": [{"label": "true", "why": "x"}]}'})
    complete = backend.complete

    def recording(prompt, schema, max_tokens):  # noqa: ANN001, ANN202 - the Backend protocol's signature
        seen.append(max_tokens)
        return complete(prompt, schema, max_tokens)

    backend.complete = recording
    schema = schema_with_items(VerifyOutput, "verdicts", 1)
    await runner.generate(Prompt("verify", "s", "v"), VerifyOutput, schema=schema)
    await runner.generate(Prompt("verify", "s", "v"), VerifyOutput, max_tokens=7, schema=schema)
    assert seen == [output_budget(schema), 7]
    assert output_budget(schema_for(VerifyOutput)) > output_budget(schema)  # up to 32 verdicts by default


async def test_an_answer_cut_by_its_budget_says_so(scripted) -> None:
    from agents.errors import ModelOutputError
    from agents.stages.segment import SegmentOutput

    runner, _ = scripted({"segment": '{"claims": ["The tower'})  # the scripted backend counts 3 tokens
    with pytest.raises(ModelOutputError, match="cut at its budget of 3 tokens"):
        await runner.generate(Prompt("segment", "s", "v"), SegmentOutput, max_tokens=3)
    with pytest.raises(ModelOutputError) as failed:
        await runner.generate(Prompt("segment", "s", "v"), SegmentOutput, max_tokens=50)
    assert "budget" not in str(failed.value)
