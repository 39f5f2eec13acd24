"""The conformance kit's property tests, run through the asyncio host as one more adapter.

SPEC H1: the same guarantees (P, O, L, K, R) from asyncio code. The harness plays generated
scenarios on :class:`AsyncioHostAdapter` (asyncio callbacks, asyncio-iterated streams, an
asyncio hook dispatcher) and on the reference model, and fails on the first disagreement.
"""

from __future__ import annotations

import logging
import os

from workflow_hub.testing.conformance import check_conformance

from .asyncio_adapter import AsyncioHostAdapter, ConsumerFailure

# More than the trio adapter's default: a stream stalled while it waits needs a few hundred draws.
EXAMPLES = int(os.environ.get("WORKFLOW_HUB_CONFORMANCE_EXAMPLES", "200"))


def _not_a_consumer_failure(record: logging.LogRecord) -> bool:
    # The hub logs each failing callback with its traceback (O5); these fail on purpose.
    return not (record.exc_info is not None and isinstance(record.exc_info[1], ConsumerFailure))


def test_the_asyncio_host_conforms() -> None:
    """H1 with P1-P9, O1-O9, L2, L3, K1, K2, R1-R3: generated scenarios, asyncio consumers."""
    hub_logger = logging.getLogger("workflow_hub")
    hub_logger.addFilter(_not_a_consumer_failure)
    try:
        report = check_conformance(AsyncioHostAdapter, max_examples=EXAMPLES)
    finally:
        hub_logger.removeFilter(_not_a_consumer_failure)
    assert report.examples == EXAMPLES
    assert report.comparisons > EXAMPLES
