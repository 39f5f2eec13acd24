"""A :class:`workflow_hub.HookRunner` whose handlers are asyncio coroutines.

The runner itself is the hub's own (K3-K7: load order, one handler at a time, the fencing check
before every handler, failures reported and the chain going on); only the handlers change
worlds. A handler that is an ``async def`` for asyncio runs as an asyncio task, and the runner's
trio task waits for it before the next handler starts; a plain function is called directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, final, overload

import attrs

from .. import ExtensionHooks as TrioExtensionHooks
from .. import HookRunner as TrioHookRunner
from .._public import NoPublicConstructor
from ._guest import Guest

if TYPE_CHECKING:
    from .. import HookEventType

__all__ = ["ExtensionHooks", "HookRunner"]

_H = TypeVar("_H", bound=Callable[[Any], object])


@final
@attrs.define(eq=False)
class ExtensionHooks(metaclass=NoPublicConstructor):
    """One extension's registrations: ``hooks.on(event_type, handler)`` or ``@hooks.on(type)``.

    Handlers may be asyncio coroutine functions or plain functions; each receives the event.
    """

    _hooks: TrioExtensionHooks
    _guest: Guest

    @property
    def name(self) -> str:
        return self._hooks.name

    def __repr__(self) -> str:
        return f"<workflow_hub.asyncio.ExtensionHooks {self.name!r}>"

    @overload
    def on(self, event_type: HookEventType, handler: _H) -> _H: ...
    @overload
    def on(self, event_type: HookEventType, handler: None = None) -> Callable[[_H], _H]: ...
    def on(self, event_type: HookEventType, handler: _H | None = None) -> _H | Callable[[_H], _H]:
        """Register ``handler`` for ``event_type`` after this extension's earlier handlers.

        An unknown ``event_type`` raises :class:`~workflow_hub.ContractError` now, as for
        :meth:`workflow_hub.ExtensionHooks.on`.
        """
        if handler is None:
            register = self._hooks.on(event_type)  # checks the event type now

            def decorate(handler: _H) -> _H:
                self._check(handler)
                register(self._guest.adapt(handler))
                return handler

            return decorate
        self._check(handler)
        self._hooks.on(event_type, self._guest.adapt(handler))
        return handler

    @staticmethod
    def _check(handler: object) -> None:
        if not callable(handler):
            from .. import ContractError

            raise ContractError("handler", f"expected a callable, got {type(handler).__name__}")


@final
@attrs.define(eq=False)
class HookRunner(metaclass=NoPublicConstructor):
    """The hub's hook runner (:class:`workflow_hub.HookRunner`) with asyncio handlers.

    Get it from ``hub.hook_runner()``; register with ``runner.extension(name).on(...)``, then
    :meth:`bind`. Events published before binding are buffered and delivered first (K1).
    """

    _runner: TrioHookRunner
    _guest: Guest
    _extensions: dict[str, ExtensionHooks] = attrs.field(init=False, factory=dict)

    @property
    def trio_runner(self) -> TrioHookRunner:
        """The runner inside the guest, for code that takes a :class:`workflow_hub.HookRunner`
        (``create_app(hub, runner=runner)`` accepts this wrapper too)."""
        return self._runner

    @property
    def extensions(self) -> tuple[str, ...]:
        return self._runner.extensions

    @property
    def retired(self) -> bool:
        return self._runner.retired

    def extension(self, name: str) -> ExtensionHooks:
        """The registration handle of extension ``name`` (the first call fixes its position)."""
        hooks = self._runner.extension(name)
        wrapper = self._extensions.get(name)
        if wrapper is None:
            wrapper = self._extensions[name] = ExtensionHooks._create(hooks, self._guest)
        return wrapper

    def bind(self) -> None:
        """Make this runner the hub's dispatcher (K1); see :meth:`workflow_hub.HookRunner.bind`."""
        self._runner.bind()

    def retire(self) -> None:
        """Seal the runner and dispose the hub (K7); see :meth:`workflow_hub.HookRunner.retire`."""
        self._runner.retire()

    def __repr__(self) -> str:
        return f"<workflow_hub.asyncio.HookRunner {self._runner!r}>"
