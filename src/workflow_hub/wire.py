"""The JSON wire format of the contract (SPEC §2): what other hosts send and receive.

``to_wire``/``from_wire`` convert between contract values and JSON-ready dicts; ``dumps``/``loads``
add the JSON text. Keys are camelCase, absent optionals are omitted (never ``null``), and every
frame, target, node and event carries its discriminator (``kind`` or ``type``). Decoding errors are
:class:`~workflow_hub.ContractError` naming the JSON path. See ``docs/wire-format.md``.
"""

from ._public import fixup_module_metadata
from ._wire import dumps as dumps
from ._wire import from_wire as from_wire
from ._wire import loads as loads
from ._wire import to_wire as to_wire

__all__ = ["dumps", "from_wire", "loads", "to_wire"]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
