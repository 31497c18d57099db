"""The runtime: a sans-IO core driven by the model, and thin transport adapters."""
