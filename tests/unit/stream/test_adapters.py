"""The private Faust and aiokafka attributes halluwatch relies on are still there, on real objects.

One test per attribute: an upgrade that removes one fails here by name (and says which adapter to
update) instead of silently losing offset commits, lag readings or topic refreshes.
"""

from __future__ import annotations

import pytest

from stream import aiokafka_adapter, faust_adapter
from stream.app import create_app
from stream.settings import Settings


@pytest.mark.parametrize("attribute", faust_adapter.PRIVATE_ATTRIBUTES)
async def test_faust_consumer_has(attribute: str, tmp_path) -> None:
    import faust

    app, _ = create_app(Settings.from_env({"HALLUWATCH_DATA_DIR": str(tmp_path)}), "kafka://localhost:1")
    assert attribute not in faust_adapter.missing_private_attributes(app.consumer), (
        f"faust-streaming {faust.__version__} has no {attribute}: update stream/faust_adapter.py"
        f" (checked on {faust_adapter.CHECKED_VERSIONS})"
    )


@pytest.mark.parametrize("attribute", aiokafka_adapter.PRIVATE_ATTRIBUTES)
async def test_aiokafka_consumer_has(attribute: str) -> None:
    import aiokafka

    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers="localhost:1")
    assert attribute not in aiokafka_adapter.missing_private_attributes(consumer), (
        f"aiokafka {aiokafka.__version__} has no {attribute}: update stream/aiokafka_adapter.py"
        f" (checked on {aiokafka_adapter.CHECKED_VERSIONS})"
    )


@pytest.mark.parametrize("adapter", [faust_adapter, aiokafka_adapter])
def test_an_object_without_the_attributes_is_reported(adapter) -> None:
    assert adapter.missing_private_attributes(object()) == list(adapter.PRIVATE_ATTRIBUTES)
