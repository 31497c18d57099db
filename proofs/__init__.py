"""Explorer and prover over the model in ``mcp_inflight.model``; neither redefines a rule."""
