"""Shared pytest configuration: hypothesis profiles.

``dev`` keeps everyday runs quick; ``ci`` tries more examples and is the default where the ``CI``
environment variable is set (as it is for ``.ci/run``). ``HYPOTHESIS_PROFILE`` overrides both, e.g.
``HYPOTHESIS_PROFILE=ci make test``. Neither has a
deadline: timings on a loaded 2-core CI machine are noise, not a property of the code.
"""

import os

from hypothesis import settings

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
