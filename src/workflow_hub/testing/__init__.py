"""Tools for testing code that speaks the workflow-hub contract.

:mod:`workflow_hub.testing.strategies` holds hypothesis strategies for every contract value. It
needs hypothesis, which is not a runtime dependency: install the ``testing`` extra
(``pip install workflow-hub[testing]``). Importing this package alone does not import hypothesis.
"""

__all__: list[str] = []
