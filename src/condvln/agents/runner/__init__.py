"""The runner's parts, one module per job (public face: :mod:`condvln.agents.run`).

* :mod:`.options` — :class:`~.options.RunOptions`, the one settings model of a run (also what
  ``condvln run --config`` validates);
* :mod:`.episodes` — the split as harness specs, and each episode's seeds;
* :mod:`.faults` — fault isolation: a failing agent call ends one episode;
* :mod:`.loop` — the episode loop: one agent per worker, episodes stepped in lockstep;
* :mod:`.plan` — the agent and the split checked, the run described (manifest) up front;
* :mod:`.pool` — the worker pool: this process, local processes or Ray actors;
* :mod:`.resume` — the run folder as a resume store;
* :mod:`.record` — recording: flushed lines, sorted files, predictions, videos.

Each module imports only the ones listed before it (checked by the import contracts in
``pyproject.toml``); :mod:`condvln.agents.run` ties them together.
"""
