"""Configured the OTel way, refused the contract's way: bad settings name what is wrong (C1),
before anything starts; the attribute names are the pinned conventions' own."""

from __future__ import annotations

import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.semconv._incubating.attributes import cicd_attributes, gen_ai_attributes
from opentelemetry.semconv.attributes import error_attributes
from opentelemetry.semconv.schemas import Schemas

from workflow_hub import ContractError, HookRunner, WorkflowActivityHub
from workflow_hub.otel import (
    DEFAULT_SERVICE_NAME,
    SCHEMA_URL,
    SEMCONV_VERSION,
    _attributes,
    open_tracing,
    trace_hub,
    tracer_provider_from_env,
)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_BSP_MAX_QUEUE_SIZE", "many"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "0"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "-3"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "carrier-pigeon"),
        # Read by the SDK, which would log a traceback and go on with its default: checked
        # first, so a typo is one line before anything starts (found by a user trial).
        ("OTEL_BSP_SCHEDULE_DELAY", "soon"),
        ("OTEL_BSP_EXPORT_TIMEOUT", "-1"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "abc"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://127.0.0.1:4318"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:99999"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://[zz::1]:4318/v1/traces"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://:4318/v1/traces"),
    ],
)
def test_a_bad_variable_is_a_contract_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ContractError, match=variable):
        tracer_provider_from_env()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://collector.example:443/v1/traces"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1]:4318/"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2.5"),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
    ],
)
def test_good_values_pass(monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    provider, _ = tracer_provider_from_env()
    provider.shutdown()


def test_grpc_without_its_exporter_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """The `otel` extra alone has no gRPC exporter (`otel-grpc` brings it): hidden here as an
    installation without it would lack it."""
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(ContractError, match="opentelemetry-exporter-otlp-proto-grpc"):
        tracer_provider_from_env()


def test_the_service_is_named_by_the_environment_or_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    provider, _ = tracer_provider_from_env()
    assert provider.resource.attributes["service.name"] == DEFAULT_SERVICE_NAME
    provider.shutdown()
    monkeypatch.setenv("OTEL_SERVICE_NAME", "nightly-hub")
    provider, _ = tracer_provider_from_env()
    assert provider.resource.attributes["service.name"] == "nightly-hub"
    provider.shutdown()


def test_bad_arguments_name_the_field() -> None:
    with pytest.raises(ContractError, match="runner"):
        trace_hub(object())  # type: ignore[arg-type]
    runner = HookRunner(WorkflowActivityHub())
    with pytest.raises(ContractError, match="tracer_provider"):
        trace_hub(runner, tracer_provider=object())  # type: ignore[arg-type]
    with pytest.raises(ContractError, match="source"):
        trace_hub(runner, tracer_provider=TracerProvider(), source=3)  # type: ignore[arg-type]
    assert runner.extensions == ()  # refused before anything registered


@pytest.mark.parametrize("interval", [0, -1.0, float("nan"), "30"])
async def test_a_bad_sweep_interval_is_refused(interval: object) -> None:
    runner = HookRunner(WorkflowActivityHub())
    with pytest.raises(ContractError, match="sweep_interval"):
        async with open_tracing(runner, tracer_provider=TracerProvider(), sweep_interval=interval):  # type: ignore[arg-type]
            pass


def test_the_attribute_names_are_the_pinned_conventions_own() -> None:
    assert getattr(Schemas, "V" + SEMCONV_VERSION.replace(".", "_")).value == SCHEMA_URL
    known = {
        value
        for module in (cicd_attributes, gen_ai_attributes, error_attributes)
        for value in vars(module).values()
        if isinstance(value, str)
    }
    ours = {
        value
        for name, value in vars(_attributes).items()
        if name.isupper() and isinstance(value, str) and not value.startswith("workflow_hub")
    } - {SEMCONV_VERSION, SCHEMA_URL}
    assert ours <= known, ours - known
    assert ours  # the check checked something
