"""The runtime: a sans-IO core driven by the model, and thin transport adapters.

* ``core``: the session core (the model's ``atomic`` design on runtime state; the admission API);
* ``server``: the server API (tools, method handlers, the handler's context) and message checks;
* ``http``: Streamable HTTP as a plain ASGI app (``create_app``);
* ``stdio``: newline-delimited JSON on stdin/stdout (``serve_stdio``).
"""
