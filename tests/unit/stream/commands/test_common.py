from __future__ import annotations

import orjson
import pytest

from agents.errors import InputError
from stream.commands.common import dump_json, readable_text


def test_readable_text_strips_and_refuses_empty_or_binary_input() -> None:
    assert readable_text("  Paris is in France.\n") == "Paris is in France."
    with pytest.raises(InputError, match="empty"):
        readable_text("   ")
    with pytest.raises(InputError, match="not readable text"):
        readable_text("ab\x00\x01cd")


def test_dump_json_is_indented_and_keeps_non_string_keys() -> None:
    text = dump_json({"a": 1, 2: [True]})
    assert orjson.loads(text) == {"a": 1, "2": [True]}
    assert "\n  " in text
