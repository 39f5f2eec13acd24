"""The hook runner: ordered workflow hook handlers, grouped by extension, fenced before each one.

A :class:`HookRunner` is the dispatcher most hosts bind to a hub (K3). Extensions register
handlers for the four workflow hooks; the hub hands the runner one event at a time, in publication
order (K6), and the runner calls the handlers of that event one after another: extensions in load
order, handlers within one in registration order. Before every handler starts, the runner checks
that the event's publisher is still current, so a reload or a publisher replacement that happens
while a handler awaits stops the rest of that event's chain (K4). A handler that raises is
reported and the chain goes on (K5).
"""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias, TypeVar, final, overload

import attrs

from .._contract import (
    ActivityChangedEvent,
    ContractError,
    HeartbeatEvent,
    LifecycleEvent,
    StageCompletedEvent,
    WorkflowEvent,
)
from .._public import NoPublicConstructor
from ._hub import WorkflowActivityHub

__all__ = ["HOOK_EVENT_TYPES", "ExtensionHooks", "HandlerFailure", "HookEventType", "HookRunner"]

logger = logging.getLogger("workflow_hub")

HookEventType: TypeAlias = Literal[
    "workflow_lifecycle",
    "workflow_activity_changed",
    "workflow_stage_completed",
    "workflow_heartbeat",
]
"""The wire name of a workflow hook, as given to ``ExtensionHooks.on``."""

HOOK_EVENT_TYPES: Final[tuple[HookEventType, ...]] = (
    LifecycleEvent.type,
    ActivityChangedEvent.type,
    StageCompletedEvent.type,
    HeartbeatEvent.type,
)
"""Every hook a handler can register for, in the order the SPEC lists them."""

_LifecycleH = TypeVar("_LifecycleH", bound=Callable[[LifecycleEvent], object])
_ChangedH = TypeVar("_ChangedH", bound=Callable[[ActivityChangedEvent], object])
_CompletedH = TypeVar("_CompletedH", bound=Callable[[StageCompletedEvent], object])
_HeartbeatH = TypeVar("_HeartbeatH", bound=Callable[[HeartbeatEvent], object])

# Handlers are stored keyed by event type; the overloads of ``ExtensionHooks.on`` are what tie a
# handler's parameter type to the hook it is registered for, so storage can forget it.
_StoredHandler: TypeAlias = Callable[[Any], object]

_SEALED = (
    "this HookRunner was retired (reload): it accepts no more registrations and cannot be "
    "bound again; open a new hub and create a new HookRunner for it"
)


_BOUND_RUNNERS: weakref.WeakKeyDictionary[WorkflowActivityHub, weakref.ref[HookRunner]] = (
    weakref.WeakKeyDictionary()
)
"""The runner bound to each hub, so that a second one cannot silently replace it (issue 12.7).

Weak both ways (a runner holds its hub): the table never keeps a hub or a runner alive."""


def _check_event_type(event_type: object) -> HookEventType:
    for known in HOOK_EVENT_TYPES:
        if event_type == known:
            return known
    names = ", ".join(HOOK_EVENT_TYPES)
    raise ContractError(
        "event_type", f"unknown workflow hook {event_type!r}; expected one of {names}"
    )


@attrs.frozen(kw_only=True)
class HandlerFailure:
    """One hook handler that raised, as the runner's ``on_error`` callback receives it (K5)."""

    extension: str
    """The name of the extension that registered the handler."""
    event_type: HookEventType
    """The hook the handler was registered for (the event's ``type``)."""
    event: WorkflowEvent
    """The event the handler was given."""
    exception: Exception
    """What the handler raised."""


@final
class ExtensionHooks(metaclass=NoPublicConstructor):
    """Registers one extension's hook handlers. Get it from ``runner.extension(name)``.

    ``on(event_type, handler)`` registers ``handler`` and returns it; ``@hooks.on(event_type)``
    does the same as a decorator. Handlers may be plain functions or async functions; each
    receives the event object, and what it returns is ignored.
    """

    __slots__ = ("_handlers", "_name", "_runner")

    def __init__(self, runner: HookRunner, name: str) -> None:
        self._runner = runner
        self._name = name
        self._handlers: dict[HookEventType, list[_StoredHandler]] = {
            event_type: [] for event_type in HOOK_EVENT_TYPES
        }

    @property
    def name(self) -> str:
        """The extension's name, exactly as given."""
        return self._name

    def __repr__(self) -> str:
        return f"<ExtensionHooks {self._name!r}>"

    @overload
    def on(
        self, event_type: Literal["workflow_lifecycle"], handler: _LifecycleH
    ) -> _LifecycleH: ...
    @overload
    def on(
        self, event_type: Literal["workflow_lifecycle"], handler: None = None
    ) -> Callable[[_LifecycleH], _LifecycleH]: ...
    @overload
    def on(
        self, event_type: Literal["workflow_activity_changed"], handler: _ChangedH
    ) -> _ChangedH: ...
    @overload
    def on(
        self, event_type: Literal["workflow_activity_changed"], handler: None = None
    ) -> Callable[[_ChangedH], _ChangedH]: ...
    @overload
    def on(
        self, event_type: Literal["workflow_stage_completed"], handler: _CompletedH
    ) -> _CompletedH: ...
    @overload
    def on(
        self, event_type: Literal["workflow_stage_completed"], handler: None = None
    ) -> Callable[[_CompletedH], _CompletedH]: ...
    @overload
    def on(
        self, event_type: Literal["workflow_heartbeat"], handler: _HeartbeatH
    ) -> _HeartbeatH: ...
    @overload
    def on(
        self, event_type: Literal["workflow_heartbeat"], handler: None = None
    ) -> Callable[[_HeartbeatH], _HeartbeatH]: ...
    def on(
        self, event_type: str, handler: _StoredHandler | None = None
    ) -> _StoredHandler | Callable[[_StoredHandler], _StoredHandler]:
        """Register ``handler`` for ``event_type`` after this extension's earlier handlers.

        ``event_type`` is a hook's wire name (or an event class's ``type`` constant); any other
        name raises :class:`ContractError` (a ``ValueError``) now, not when an event arrives.
        Registering on a retired runner raises ``RuntimeError``. A handler registered while an
        event is being dispatched takes part from the next event on.
        """
        checked = _check_event_type(event_type)
        self._runner._check_open()
        if handler is None:

            def register(handler: _StoredHandler) -> _StoredHandler:
                self._add(checked, handler)
                return handler

            return register
        self._add(checked, handler)
        return handler

    def _add(self, event_type: HookEventType, handler: _StoredHandler) -> None:
        if not callable(handler):
            raise ContractError("handler", f"expected a callable, got {type(handler).__name__}")
        self._runner._check_open()
        self._handlers[event_type].append(handler)
        self._runner._chains.clear()  # rebuilt on the next event of each type


@final
class HookRunner:
    """Runs extensions' workflow hook handlers for one hub (K3-K7).

    Register handlers with ``runner.extension(name).on(event_type, handler)``, then call
    :meth:`bind`: events the hub buffered before that are delivered first, asynchronously, in
    publication order (K1). For each event the runner calls, one at a time and each awaited, the
    handlers of every extension in load order (the order of first ``extension(name)`` calls), and
    within an extension in registration order. The list is captured when the event's dispatch
    starts. Before every handler the runner checks that the publisher of the event is still
    current; once it is not (disposed, replaced, or the runner retired) the rest of the chain is
    skipped. A running handler is never cancelled (K4).

    A handler that raises is logged on the ``workflow_hub`` logger and passed to ``on_error`` as
    a :class:`HandlerFailure`; the chain goes on (K5). ``on_error`` is called synchronously from
    the dispatch; if it raises, that is logged too and dispatch goes on.

    :meth:`retire` is the reload path (K7): it seals the runner and disposes the hub.
    """

    __slots__ = ("__weakref__", "_chains", "_extensions", "_hub", "_on_error", "_retired")

    def __init__(
        self,
        hub: WorkflowActivityHub,
        *,
        on_error: Callable[[HandlerFailure], object] | None = None,
    ) -> None:
        if not isinstance(hub, WorkflowActivityHub):
            raise ContractError("hub", f"expected a WorkflowActivityHub, got {type(hub).__name__}")
        if on_error is not None:
            if not callable(on_error):
                raise ContractError(
                    "on_error", f"expected a callable, got {type(on_error).__name__}"
                )
            if inspect.iscoroutinefunction(on_error):
                raise ContractError(
                    "on_error", "expected a plain function: it is called synchronously"
                )
        self._hub = hub
        self._on_error = on_error
        # Insertion order is load order.
        self._extensions: dict[str, ExtensionHooks] = {}
        # Each hook's chain, built on its first event after a registration (which clears this):
        # a tuple, so a dispatch that holds one never sees a registration made meanwhile.
        self._chains: dict[str, tuple[tuple[str, _StoredHandler], ...]] = {}
        self._retired = False

    def __repr__(self) -> str:
        state = "retired" if self._retired else "open"
        return f"<HookRunner {state}, extensions={list(self._extensions)!r}>"

    @property
    def hub(self) -> WorkflowActivityHub:
        """The hub this runner dispatches for."""
        return self._hub

    @property
    def extensions(self) -> tuple[str, ...]:
        """Extension names in load order: the order in which ``extension()`` first saw them."""
        return tuple(self._extensions)

    @property
    def retired(self) -> bool:
        """Whether :meth:`retire` was called."""
        return self._retired

    def extension(self, name: str) -> ExtensionHooks:
        """The registration handle of extension ``name``; the first call fixes its load position.

        Later calls with the same name return the same handle. Names are kept raw: ``""``,
        ``" x "`` and unicode names are distinct, legal names. Raises ``RuntimeError`` once the
        runner is retired.
        """
        if not isinstance(name, str):
            raise ContractError("name", f"expected a string, got {type(name).__name__}")
        self._check_open()
        hooks = self._extensions.get(name)
        if hooks is None:
            hooks = self._extensions[name] = ExtensionHooks._create(self, name)
        return hooks

    def bind(self) -> None:
        """Make this runner the hub's hook dispatcher (K1).

        Events published before binding were buffered by the hub; they are delivered first,
        asynchronously, in publication order. Binding again is harmless. Binding a second
        runner to a hub whose runner is not retired raises ``RuntimeError``: its handlers would
        silently stop. Raises ``RuntimeError`` once retired.
        """
        self._check_open()
        bound_ref = _BOUND_RUNNERS.get(self._hub)
        bound = None if bound_ref is None else bound_ref()
        if bound is not None and bound is not self and not bound._retired:
            raise RuntimeError(
                "another HookRunner is already bound to this hub: register every extension on "
                "that one (one runner per hub), or retire it and use a new hub (the reload path)"
            )
        self._hub._bind_runner(self)
        _BOUND_RUNNERS[self._hub] = weakref.ref(self)

    def retire(self) -> None:
        """Seal the runner and dispose its hub: the reload path (K7). Idempotent.

        Every observer lease is disposed, every publisher fenced and every buffered or queued
        event dropped. A handler already running finishes; no other handler starts. The next
        generation of extensions uses a new hub (a new epoch) and a new runner.
        """
        if self._retired:
            return
        self._retired = True
        self._hub.dispose()

    def _check_open(self) -> None:
        if self._retired:
            raise RuntimeError(_SEALED)

    def _chain(self, event_type: HookEventType) -> tuple[tuple[str, _StoredHandler], ...]:
        chain = self._chains.get(event_type)
        if chain is None:
            chain = self._chains[event_type] = tuple(
                (name, handler)
                for name, hooks in self._extensions.items()
                for handler in hooks._handlers[event_type]
            )
        return chain

    def _handler_raised(self, extension: str, event: WorkflowEvent, exc: Exception) -> None:
        self._report(
            HandlerFailure(extension=extension, event_type=event.type, event=event, exception=exc)
        )

    def _report(self, failure: HandlerFailure) -> None:
        self._hub._handler_failed()
        logger.error(
            "workflow hook handler failed: extension %r, hook %s",
            failure.extension,
            failure.event_type,
            exc_info=failure.exception,
        )
        if self._on_error is None:
            return
        try:
            result = self._on_error(failure)
            if inspect.iscoroutine(result):
                # An async callable the constructor could not recognise: it is never awaited.
                result.close()
                raise TypeError("on_error returned a coroutine; it must be a plain function")
        except Exception:
            logger.exception(
                "the HookRunner on_error callback failed reporting extension %r, hook %s",
                failure.extension,
                failure.event_type,
            )
