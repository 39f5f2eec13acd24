"""Adapter programs for the conformance command's tests: a broken hub behind the JSON-lines
protocol, written once for every test file that runs it."""

FORGETS_FENCED = """
from workflow_hub import DiagnosticKind
from workflow_hub.testing.conformance import HubAdapter, serve


class ForgetsPublisherFenced:
    def __init__(self, config):
        self.inner = HubAdapter(config)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def diagnostics(self):
        diagnostics = await self.inner.diagnostics()
        return [d for d in diagnostics if d.kind is not DiagnosticKind.PUBLISHER_FENCED]


serve(ForgetsPublisherFenced)
"""
"""A JSON-lines adapter that drops ``PublisherFenced`` diagnostics (breaks P2)."""
