"""The contract's value types, enumerations and error (SPEC §2); all re-exported by ``workflow_hub``.

The lists are derived, not repeated: whatever ``_contract`` and ``_enums`` export is exported here.
"""

from . import _contract, _enums
from ._contract import *  # noqa: F403
from ._enums import *  # noqa: F403
from ._errors import ContractError as ContractError

__all__ = ["ContractError"]
__all__ += _contract.__all__
__all__ += _enums.__all__
