import os
from functools import lru_cache

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


@lru_cache(maxsize=None)
def run(design: str, revision: str, transport: str, ids: int = 2, requests: int = 2,
        symmetry: bool = True):
    """One explorer run, shared by every test that asks for it."""
    from mcp_inflight.model import DESIGNS, Config
    from mcp_inflight.proofs.explore import explore

    return explore(Config(DESIGNS[design], revision, transport, ids=ids, requests=requests),
                   symmetry=symmetry, progress=False)
