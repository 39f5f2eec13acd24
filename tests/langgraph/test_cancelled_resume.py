"""A resume cancelled before LangGraph took its answer (issue 38, found by a user trial): the
thread still waits for the answers it was asked, so its root stays blocked on them, instead of
reading killed with nothing to answer. Once a task of the resume started, a cancellation is a
kill as before. Driven through the mapper itself: when a cancellation lands inside LangGraph is
a matter of timing, what each case must show is not."""

from __future__ import annotations

from workflow_hub import RunTracker, open_hub
from workflow_hub.langgraph._mapping import PromptSpec, ThreadMapper


async def test_a_resume_cancelled_before_its_tasks_leaves_the_thread_waiting() -> None:
    async with open_hub() as hub:
        tracker = RunTracker(hub.register_publisher(), owner_session_id="s")
        tracker.start()
        mapper = ThreadMapper(tracker, "t", heartbeat_interval_minutes=None)
        mapper.begin(resume=False)
        mapper.task_started("ask:1", "ask", 1)
        mapper.task_interrupted("ask:1", [PromptSpec("p1", "input", "Publish it?")])
        mapper.end("completed")
        waiting = tracker.activity("t")
        assert (str(waiting.state), waiting.actionable_block_count) == ("blocked", 1)

        mapper.begin(resume=True)
        mapper.end("killed")  # cancelled before LangGraph ran a task: it took no answer
        after = tracker.activity("t")
        assert (str(after.state), after.actionable_block_count) == ("blocked", 1)
        assert str(tracker.run_status("t")) == "running"
        assert mapper.waiting

        mapper.begin(resume=True)
        mapper.task_started("ask:1", "ask", 1)  # LangGraph took the answer and reran the task
        mapper.end("killed")
        assert str(tracker.run_status("t")) == "killed"
        assert tracker.activity("t").actionable_block_count == 0
