"""The base of every exception the library raises: ``except workflow_hub.WorkflowHubError``.

It lives in the base layer, below every module that defines an exception (the contract's
``ContractError`` included), and imports nothing, so that the command line's one-shot commands
(``workflow-hub status``) can subclass it without loading the contract. docs/exceptions.md draws
the tree.
"""

__all__ = ["WorkflowHubError"]


class WorkflowHubError(Exception):
    """Any error of this library: every exception class workflow_hub defines derives from it.

    Each subclass keeps the builtin base it had (``ContractError`` is a ``ValueError`` too,
    ``HostClosedError`` a ``RuntimeError``), so code that catches those goes on catching. A
    misuse of the API (a constructor called by hand, a context entered twice, a blocking call from
    the hub's own thread) raises the builtin ``TypeError`` or ``RuntimeError`` instead, as trio
    and httpx do: a bug to fix, not a condition to handle.
    """
