"""``serve`` plays the demo's story at its natural pace, again and again (issue 24): every round
starts with fresh runs of the same names, and no round crashes on what the previous one left.

Three rounds (69 seconds of story) run on trio's MockClock, so the test takes a moment.
"""

from __future__ import annotations

import trio
import trio.testing

from workflow_hub import RunTracker, open_hub
from workflow_hub._cli._demo_script import (
    NOMINAL_SECONDS,
    PAUSE_BETWEEN_ROUNDS,
    ROOTS,
    loop_scenario,
)
from workflow_hub.reporting import ActivityView

ROUND = NOMINAL_SECONDS + PAUSE_BETWEEN_ROUNDS


def test_every_round_shows_every_root_and_the_loop_never_stops() -> None:
    async def main() -> tuple[list[set[str]], list[int], ActivityView]:
        view = ActivityView()
        seen_per_round: list[set[str]] = []
        at_round_end: list[int] = []
        async with open_hub() as hub:
            hub.observe(view.apply)
            tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: loop_scenario(tracker, seed=7))
                for _ in range(3):
                    seen: set[str] = set()
                    for _ in range(int(ROUND * 4)):
                        await trio.sleep(0.25)
                        seen |= {root.root_run_id for root in view.roots}
                    seen_per_round.append(seen)
                    at_round_end.append(len(view.roots))
                nursery.cancel_scope.cancel()
        return seen_per_round, at_round_end, view

    seen_per_round, at_round_end, view = trio.run(
        main, clock=trio.testing.MockClock(autojump_threshold=0)
    )
    assert len(seen_per_round) == 3
    for seen in seen_per_round:
        assert set(ROOTS) <= seen
    assert all(count > 0 for count in at_round_end)  # a new round was under way each time
    assert view.known
