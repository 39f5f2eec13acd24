"""A LangGraph agent you can watch on the dashboard while it waits for your approval.

    .venv/bin/python examples/langgraph_approval.py

The graph plans, then runs two branches in parallel (research calls a tool; drafting fails once
and is retried by its RetryPolicy), then hands the draft to a review subgraph whose last node
asks a human for approval with ``interrupt()``, and publishes what was approved. It runs with the
thread host (``workflow_hub.sync``) and the dashboard: open the URL it prints, watch the stages
run, see the root turn blocked / awaiting_input, answer here, and watch it finish.

``--pace`` sets how long each node works (seconds); ``--port`` the dashboard's port (0: any).
Answers are read from standard input, so ``printf 'yes\\n\\n' | ... --pace 0`` runs it unattended.
"""

from __future__ import annotations

import argparse
import operator
import sys
import time
from typing import Annotated, Any, TypedDict

from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, RetryPolicy, interrupt

import workflow_hub.sync
from workflow_hub.langgraph import watch


class State(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    draft: str
    verdict: str


def build(pace: float) -> Any:
    """The agent: plan -> (research | draft) -> review (a subgraph that asks) -> publish."""

    @tool
    def search(query: str) -> str:
        """Search the team's notes for a query."""
        time.sleep(pace)
        return f"3 notes about {query}"

    def plan(state: State) -> dict[str, Any]:
        time.sleep(pace)
        return {"notes": [f"plan: write about {state['topic']}"]}

    def research(state: State) -> dict[str, Any]:
        return {"notes": [search.invoke({"query": state["topic"]})]}

    attempts: list[int] = []

    def draft(state: State) -> dict[str, Any]:
        time.sleep(pace)
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("the drafting service hiccuped")  # retried by its policy
        return {"draft": f"A short note on {state['topic']}."}

    def check(state: State) -> dict[str, Any]:
        time.sleep(pace)
        return {"notes": ["check: spelling ok"]}

    def approve(state: State) -> dict[str, Any]:
        answer = interrupt(
            {"message": f"Publish this draft? {state['draft']!r}", "choices": ["yes", "no"]}
        )
        return {"verdict": str(answer)}

    review = StateGraph(State)
    review.add_node("check", check)
    review.add_node("approve", approve)
    review.add_edge(START, "check")
    review.add_edge("check", "approve")
    review.add_edge("approve", END)

    def publish(state: State) -> dict[str, Any]:
        time.sleep(pace)
        return {"notes": [f"published: {state['verdict'] == 'yes'}"]}

    agent = StateGraph(State)
    agent.add_node("plan", plan)
    agent.add_node("research", research)
    agent.add_node(
        "draft",
        draft,
        retry_policy=RetryPolicy(initial_interval=pace, jitter=False, retry_on=ConnectionError),
    )
    agent.add_node("review", review.compile())
    agent.add_node("publish", publish)
    agent.add_edge(START, "plan")
    agent.add_edge("plan", "research")
    agent.add_edge("plan", "draft")
    agent.add_edge(["research", "draft"], "review")
    agent.add_edge("review", "publish")
    agent.add_edge("publish", END)
    return agent.compile(checkpointer=InMemorySaver())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pace", type=float, default=1.0, help="seconds each node works")
    parser.add_argument("--port", type=int, default=0, help="the dashboard's port (0: any free)")
    args = parser.parse_args(argv)

    with workflow_hub.sync.open_hub() as hub:
        tracker = hub.tracker(owner_session_id="langgraph-example", include_graph=True)
        tracker.start()
        url = hub.serve(host="127.0.0.1", port=args.port)
        print(f"dashboard: {url}/", flush=True)

        agent = watch(build(args.pace), tracker)
        config = {"configurable": {"thread_id": "note-1"}}
        result = agent.invoke({"topic": "watching agents", "notes": []}, config)
        while "__interrupt__" in result:
            question = result["__interrupt__"][0].value
            print(f"{question['message']} [{'/'.join(question['choices'])}] ", end="", flush=True)
            answer = sys.stdin.readline().strip() or "no"
            result = agent.invoke(Command(resume=answer), config)
        print(f"done: {result['notes'][-1]}", flush=True)
        print("press Enter to stop serving the dashboard", flush=True)
        sys.stdin.readline()
    return 0


if __name__ == "__main__":
    sys.exit(main())
