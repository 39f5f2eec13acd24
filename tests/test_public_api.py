"""The public surface: every exported name is importable from ``workflow_hub`` and says so."""

import workflow_hub
from workflow_hub import contract


def test_every_public_name_is_exported_once_and_importable() -> None:
    assert len(workflow_hub.__all__) == len(set(workflow_hub.__all__))
    for name in workflow_hub.__all__:
        assert hasattr(workflow_hub, name), name


def test_contract_names_are_reexported_from_the_package() -> None:
    for name in contract.__all__:
        assert getattr(workflow_hub, name) is getattr(contract, name)


def test_public_classes_claim_the_package_as_their_module() -> None:
    for name in workflow_hub.__all__:
        value = getattr(workflow_hub, name)
        if isinstance(value, type):
            assert value.__module__ == "workflow_hub", name
