"""The one error type of the contract."""

from __future__ import annotations

from .._exceptions import WorkflowHubError

__all__ = ["ContractError"]


class ContractError(WorkflowHubError, ValueError):
    """A value does not satisfy the workflow-hub contract.

    Raised when a contract value is built from a wrong type, an unknown enumeration value, a negative
    count or a non-finite number, when wire data cannot be decoded, and when a publisher method is
    given a bad argument. It is raised *before* anything changes, so catching it leaves every hub and
    value as it was.

    ``path`` names the offending field: a Python attribute name (``active_execution_count``,
    ``parent_ids[1]``) for constructors and publisher arguments, a JSON path of wire names
    (``roots[2].activeExecutionCount``) for wire decoding. It is empty when the whole value is wrong.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)
