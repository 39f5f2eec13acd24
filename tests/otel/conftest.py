"""The OTel tests' scene: a loopback OTLP receiver, and the standard variables pointing at it.

``otlp`` starts a :class:`~tests.otel.receiver.Receiver` and sets ``OTEL_EXPORTER_OTLP_*`` and
``OTEL_SERVICE_NAME`` as a user would, so the tracing under test builds its exporter the OTel
way. The batch processor's delay is short so that a test never waits on its 5-second default.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.otel.receiver import Receiver, running_receiver


def point_at(monkeypatch: pytest.MonkeyPatch, receiver: Receiver) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "hub-under-test")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", raising=False)
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)


@pytest.fixture
def otlp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    with running_receiver("ok") as receiver:
        point_at(monkeypatch, receiver)
        yield receiver
