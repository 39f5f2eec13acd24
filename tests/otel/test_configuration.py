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
    ],
)
def test_a_bad_variable_is_a_contract_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ContractError, match=variable):
        tracer_provider_from_env()


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
