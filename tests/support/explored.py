"""Explorer runs shared by every test that asks for the same configuration."""

from functools import cache


@cache
def run(
    design: str,
    revision: str,
    transport: str,
    ids: int = 2,
    requests: int = 2,
    symmetry: bool = True,
    client: str = "reusing",
):
    """One explorer run, shared by every test that asks for it."""
    from mcp_inflight.model import DESIGNS, Config
    from mcp_inflight.proofs.explore import explore

    return explore(
        Config(DESIGNS[design], revision, transport, ids, requests, client),
        symmetry=symmetry,
        progress=False,
    )
