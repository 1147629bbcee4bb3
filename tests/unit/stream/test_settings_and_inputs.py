from pathlib import Path

import pytest

from agents.errors import InputError
from agents.evaluation.datasets import read_averitec, read_diahalu
from agents.evidence.passages import chronological, parse_date, read_passages
from agents.model.prompting import PROMPT_DIR, SEPARATOR, PromptTemplate
from stream.build import build_pipeline
from stream.settings import Settings
from tests.conftest import SHARED_DATA
from tests.support.records import passage


def test_env_then_flags() -> None:
    settings = Settings.from_env({"HALLUWATCH_N_CTX": "2048", "HALLUWATCH_MODEL_PATH": "/m.gguf", "HALLUWATCH_PARTITIONS": "8"})
    assert settings.model.n_ctx == 2048 and settings.model.model_path == Path("/m.gguf") and settings.partitions == 8
    overridden = settings.override(**{"model.n_ctx": 1024, "partitions": None})
    assert overridden.model.n_ctx == 1024 and overridden.partitions == 8


def test_the_encoder_threads_come_from_the_settings() -> None:
    settings = Settings.from_env({"HALLUWATCH_ENCODER_THREADS": "3"})
    assert build_pipeline(settings).nli.threads == 3
    assert build_pipeline(settings.override(**{"model.encoder_threads": 1})).nli.threads == 1
    with pytest.raises(InputError, match="HALLUWATCH_ENCODER_THREADS"):
        build_pipeline(settings.override(**{"model.encoder_threads": 0}))


def test_bad_env_value_names_the_variable() -> None:
    with pytest.raises(InputError, match="HALLUWATCH_N_CTX"):
        Settings.from_env({"HALLUWATCH_N_CTX": "lots"})


@pytest.mark.parametrize("name", sorted(p.stem for p in PROMPT_DIR.glob("*.txt")))
def test_every_prompt_renders(name: str) -> None:
    template = PromptTemplate.load(name)
    assert SEPARATOR not in template.static
    fields = {"context": "user: hi", "text": 'He said "{x}"', "claims": "1. c", "evidence": "[1] e", "claim": "c",
              "old_date": "2001-01-01", "old_text": "o", "new_date": "2002-02-02", "new_text": "n"}
    prompt = template.render(**fields)
    assert prompt.text.startswith(template.static)
    assert prompt.variable.strip(), name


def test_chronological_order_puts_undated_last() -> None:
    ordered = chronological([passage("b", "p2", None), passage("c", "p3", "2021-01-01"), passage("a", "p1", "1999-12-31")])
    assert [p.passage_id for p in ordered] == ["p1", "p3", "p2"]


@pytest.mark.parametrize(("raw", "iso"), [("6-9-2020", "2020-09-06"), ("2021-03-04", "2021-03-04"),
                                          ("2021-03-04T10:00:00Z", "2021-03-04"), ("unknown", None), ("soon", None)])
def test_parse_date(raw: str, iso: str | None) -> None:
    assert parse_date(raw) == iso


def test_evidence_file_errors_name_the_line(tmp_path) -> None:
    f = tmp_path / "ev.jsonl"
    f.write_text('{"text": "ok", "url": "https://a"}\nnot json\n')
    with pytest.raises(InputError, match=r"ev.jsonl:2"):
        read_passages(f)
    with pytest.raises(InputError, match="cannot read"):
        read_passages(tmp_path / "missing.jsonl")


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is not beside the checkout")
def test_benchmark_files_parse() -> None:
    claims = read_averitec(SHARED_DATA / "averitec" / "dev-public.jsonl")
    dialogues = read_diahalu(SHARED_DATA / "diahalu" / "dev-public.jsonl")
    assert len(claims) == 200 and len(dialogues) == 88
    assert all(c.passages for c in claims[:20])
    assert sum(d.hallucination for d in dialogues) == 44


def test_a_calibration_fitted_on_a_judges_letters_needs_that_judge(tmp_path) -> None:
    from agents.scoring.calibration import VerifyCalibration

    VerifyCalibration.identity("qwen-1.5b").save(tmp_path / "judged.json")
    with pytest.raises(InputError, match=r"set HALLUWATCH_JUDGE \(--judge\) to qwen-1.5b"):
        build_pipeline(Settings(calibration_path=tmp_path / "judged.json"))
    # One fitted before the judge left claims without evidence alone cannot decide them: refit, the error says.
    with pytest.raises(InputError, match="train-verifier --judge qwen-1.5b"):
        build_pipeline(Settings(calibration_path=tmp_path / "judged.json", judge="qwen-1.5b"))
    with pytest.raises(InputError, match="unknown judge 'gpt'"):
        build_pipeline(Settings.from_env({"HALLUWATCH_JUDGE": "gpt"}))
