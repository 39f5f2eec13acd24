"""The names the hub's spans carry: the CI/CD and GenAI semantic conventions, pinned.

The attribute names are written here as strings, not imported from
``opentelemetry-semantic-conventions``: both conventions are in Development status and their
incubating modules move between releases, while what a backend's saved queries match is the
string. ``SEMCONV_VERSION`` is the version they were checked against (docs/otel.md has the table).
"""

from __future__ import annotations

import os
from typing import Final

__all__ = [
    "SCHEMA_URL",
    "SEMCONV_VERSION",
    "genai_names",
]

SEMCONV_VERSION: Final = "1.44.0"
"""The semantic-conventions release the attribute names below follow."""

SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
"""The schema URL of the hub's tracer: the conventions' version, for backends that translate."""

# CI/CD (development): a run is a pipeline run, a stage or a tool a task run.
PIPELINE_NAME: Final = "cicd.pipeline.name"
PIPELINE_RUN_ID: Final = "cicd.pipeline.run.id"
PIPELINE_RUN_STATE: Final = "cicd.pipeline.run.state"
PIPELINE_RESULT: Final = "cicd.pipeline.result"
PIPELINE_ACTION: Final = "cicd.pipeline.action.name"
TASK_NAME: Final = "cicd.pipeline.task.name"
TASK_RUN_ID: Final = "cicd.pipeline.task.run.id"
TASK_RUN_RESULT: Final = "cicd.pipeline.task.run.result"

# GenAI (development): a run invokes a workflow, a tool node executes a tool.
GENAI_OPERATION: Final = "gen_ai.operation.name"
GENAI_WORKFLOW_NAME: Final = "gen_ai.workflow.name"
GENAI_TOOL_NAME: Final = "gen_ai.tool.name"
GENAI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GENAI_CONVERSATION_ID: Final = "gen_ai.conversation.id"

ERROR_TYPE: Final = "error.type"

# The hub's own, under its namespace.
SOURCE: Final = "workflow_hub.source"
ROOT_RUN_ID: Final = "workflow_hub.root_run_id"
OWNER_SESSION_ID: Final = "workflow_hub.owner_session_id"
LABEL_PREFIX: Final = "workflow_hub.label."
KIND: Final = "workflow_hub.span.kind"
STATUS: Final = "workflow_hub.status"
ACTION: Final = "workflow_hub.run.action"
ATTEMPTS: Final = "workflow_hub.attempts"
FIRST_SEEN_MID_FLIGHT: Final = "workflow_hub.first_seen_mid_flight"
PARENT_INFERRED: Final = "workflow_hub.parent_inferred"
STARTED_BY_CHILD: Final = "workflow_hub.started_by_child"
PARENT_LOST: Final = "workflow_hub.parent_lost"
ENDED_BY: Final = "workflow_hub.ended_by"
PROMPT_ID: Final = "workflow_hub.prompt.id"
PROMPT_RESULT: Final = "workflow_hub.prompt.result"
DELIVERY: Final = "workflow_hub.delivery"
ATTRIBUTION: Final = "workflow_hub.attribution"
ERROR_MESSAGE: Final = "workflow_hub.error.message"

# Span events.
EVENT_RETRY: Final = "workflow_hub.retry"
EVENT_FAILED: Final = "workflow_hub.failed"
EVENT_STATUS: Final = "workflow_hub.status_changed"
EVENT_CONTROL: Final = "workflow_hub.control"

RUN_RESULTS: Final = {
    "completed": "success",
    "failed": "failure",
    "cancelled": "cancellation",
    "killed": "cancellation",
    "skipped": "skip",
}
"""A run's final status as ``cicd.pipeline.result``."""

TASK_RESULTS: Final = {
    "completed": "success",
    "cached": "success",
    "failed": "failure",
    "cancelled": "cancellation",
    "skipped": "skip",
}
"""A stage's or tool's final status as ``cicd.pipeline.task.run.result``."""

RUN_STATES: Final = {"pending": "pending", "running": "executing", "paused": "pending"}
"""A run's status as ``cicd.pipeline.run.state`` (the ones the convention has a word for)."""


def genai_names() -> bool:
    """Whether span names follow the GenAI conventions (``invoke_workflow {name}``,
    ``execute_tool {name}``) instead of the CI/CD ones (``RUN {name}``, the task's name).

    ``OTEL_SEMCONV_STABILITY_OPT_IN`` with ``gen_ai_latest_experimental`` asks for the GenAI
    names, as the Python SIG's GenAI instrumentations read it; the attributes of both
    conventions are on the spans either way.
    """
    opted = os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN", "")
    return "gen_ai_latest_experimental" in {part.strip() for part in opted.split(",")}
