"""The JSON wire format of the contract (SPEC §2): what other hosts send and receive.

``to_wire``/``from_wire`` convert between contract values and JSON-ready dicts; ``dumps``/``loads``
add the JSON text. Keys are camelCase, absent optionals are omitted (never ``null``), and every
frame, target, node and event carries its discriminator (``kind`` or ``type``). Decoding errors are
:class:`~workflow_hub.ContractError` naming the JSON path. ``format_cursor``/``parse_cursor`` are
the text form of a cursor (``"<epoch>:<revision>"``) that transports resume from. See
``docs/wire-format.md``.
"""

from ._contract import dumps as dumps
from ._contract import format_cursor as format_cursor
from ._contract import from_wire as from_wire
from ._contract import loads as loads
from ._contract import parse_cursor as parse_cursor
from ._contract import to_wire as to_wire
from ._public import fixup_module_metadata

__all__ = ["dumps", "format_cursor", "from_wire", "loads", "parse_cursor", "to_wire"]

fixup_module_metadata(__name__, globals())
del fixup_module_metadata
