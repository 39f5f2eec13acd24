"""The conformance kit run through the thread host (``workflow_hub.sync``) as one more adapter.

SPEC H1: plain threads reach the same hub with the same guarantees. :class:`SyncHostAdapter`
runs every operation in the host's trio thread and, for the threads profile, hands the kit's
OS threads the host's own thread-safe :class:`workflow_hub.sync.Publisher`.
"""

from __future__ import annotations

import logging
import os

from workflow_hub.testing.conformance import check_conformance

from .sync_adapter import ConsumerFailure, SyncHostAdapter

EXAMPLES = int(os.environ.get("WORKFLOW_HUB_CONFORMANCE_EXAMPLES", "60"))


def _not_a_consumer_failure(record: logging.LogRecord) -> bool:
    # The hub logs each failing callback with its traceback (O5); these fail on purpose.
    return not (record.exc_info is not None and isinstance(record.exc_info[1], ConsumerFailure))


def test_the_thread_host_conforms_with_bursts_from_threads() -> None:
    """H1 with P, O1-O8, L, K, R and the threads profile: generated scenarios, then bursts of
    publishes from real OS threads through ``workflow_hub.sync.Publisher``."""
    hub_logger = logging.getLogger("workflow_hub")
    hub_logger.addFilter(_not_a_consumer_failure)
    try:
        report = check_conformance(SyncHostAdapter, max_examples=EXAMPLES, seed=11)
    finally:
        hub_logger.removeFilter(_not_a_consumer_failure)
    assert report.profiles == ("source", "resume", "threads")
    assert report.examples == EXAMPLES
    assert report.thread_examples == EXAMPLES
