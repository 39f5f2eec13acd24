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


async def test_handles_have_no_public_constructor() -> None:
    """Issue 13.2: publishers, leases, streams and extension handles come from the hub or runner.

    A publisher built by hand was *current* and published, bypassing ``register_publisher()``
    and its fencing (P1, P2).
    """
    import pytest

    from workflow_hub import (
        ExtensionHooks,
        FrameStream,
        HookRunner,
        ObserverLease,
        WorkflowActivityPublisher,
        open_hub,
    )

    async with open_hub() as hub:
        publisher = hub.register_publisher()
        lease = hub.observe(lambda frame: None)
        runner = HookRunner(hub)
        hooks = runner.extension("ext")
        async with hub.subscribe() as stream:
            forgeries = [
                (WorkflowActivityPublisher, (hub, hub.cursor.epoch)),
                (ObserverLease, (hub, None)),
                (FrameStream, (stream.lease, None)),
                (ExtensionHooks, (runner, "ext")),
            ]
            for cls, args in forgeries:
                with pytest.raises(TypeError, match="no public constructor"):
                    cls(*args)
        revision = hub.cursor.revision
        assert publisher.current
        assert publisher.publish_removed("nothing") is not None
        assert hub.cursor.revision == revision + 1
        assert not lease.disposed
        assert hooks.name == "ext"
