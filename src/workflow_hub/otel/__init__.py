"""OpenTelemetry for the hub: every run a trace, every stage, tool and human wait a span.

``async with open_tracing(runner) as tracing:`` turns the lifecycle events of ``runner``'s hub
into spans, exported with the OTel SDK's batch processor over OTLP (HTTP, protobuf, by default),
configured by the standard ``OTEL_*`` variables. Attributes follow the CI/CD and GenAI semantic
conventions at ``SEMCONV_VERSION``. Needs the ``otel`` extra
(``pip install 'workflow-hub[otel]'``). See docs/otel.md.
"""

from .._public import fixup_module_metadata
from ._attributes import SCHEMA_URL as SCHEMA_URL
from ._attributes import SEMCONV_VERSION as SEMCONV_VERSION
from ._export import DEFAULT_SERVICE_NAME as DEFAULT_SERVICE_NAME
from ._export import ExportStatistics as ExportStatistics
from ._export import tracer_provider_from_env as tracer_provider_from_env
from ._fleet import FleetTracing as FleetTracing
from ._fleet import trace_fleet as trace_fleet
from ._follow import trace_source as trace_source
from ._tracing import DEFAULT_SWEEP_INTERVAL as DEFAULT_SWEEP_INTERVAL
from ._tracing import HubTracing as HubTracing
from ._tracing import TracingStatistics as TracingStatistics
from ._tracing import open_tracing as open_tracing
from ._tracing import trace_hub as trace_hub

__all__ = [
    "DEFAULT_SERVICE_NAME",
    "DEFAULT_SWEEP_INTERVAL",
    "SCHEMA_URL",
    "SEMCONV_VERSION",
    "ExportStatistics",
    "FleetTracing",
    "HubTracing",
    "TracingStatistics",
    "open_tracing",
    "trace_fleet",
    "trace_hub",
    "trace_source",
    "tracer_provider_from_env",
]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
