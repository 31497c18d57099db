"""Wire traces: the JSON Lines format (``format``), the recording reverse proxy (``record``) and
the replay check against the model (``replay``, through ``model/observe.py``)."""
